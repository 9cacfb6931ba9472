"""The observability stack as synthesized for dev (the shared session synth) and for an existing
cluster (the shared ``existing`` synth), read back from the real templates."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import yaml
from aws_cdk import Environment, Stack
from aws_cdk.assertions import Template

from infra.cdk.context import new_app
from infra.config import parse_config
from infra.config.model import topic_name
from infra.constructs.observability import Observability
from infra.metrics.alerts import alert_rules_yaml
from k8s.observability import scrape_config
from tests.support.config import existing_cluster_config
from tests.support.promtool import check_rules, needs_promtool
from tests.support.synth import Synth

SUFFIX = "observability"


def one(env: Synth, type_: str) -> dict[str, Any]:
    (resource,) = env.resources(SUFFIX, type_).values()
    props: dict[str, Any] = resource["Properties"]
    return props


def test_the_workspace_keeps_amps_own_key_so_the_managed_collector_can_write(dev: Synth) -> None:
    """The AMP user guide: a workspace with a customer managed key cannot use managed
    collectors. The default (aws_owned) leaves KmsKeyArn out; the collector is created."""
    ws = one(dev, "AWS::APS::Workspace")
    assert "KmsKeyArn" not in ws
    assert dev.resources(SUFFIX, "AWS::APS::Scraper")


def test_the_workspace_logs(dev: Synth) -> None:
    ws = one(dev, "AWS::APS::Workspace")
    (log_id,) = dev.resources(SUFFIX, "AWS::Logs::LogGroup")
    assert ws["LoggingConfiguration"]["LogGroupArn"] == {"Fn::GetAtt": [log_id, "Arn"]}


def test_scraper_config_is_the_generated_one(dev: Synth) -> None:
    scraper = one(dev, "AWS::APS::Scraper")
    blob = scraper["ScrapeConfiguration"]["ConfigurationBlob"]
    assert yaml.safe_load(base64.b64decode(blob)) == scrape_config(dev.config)
    eks = scraper["Source"]["EksConfiguration"]
    assert "eks" in json.dumps(eks["ClusterArn"])
    assert len(eks["SubnetIds"]) == 2  # the managed collector needs two AZs
    assert "ClusterSecurityGroup" in json.dumps(eks["SecurityGroupIds"])


def test_no_iam_role_and_no_access_entry(dev: Synth) -> None:
    # AMP makes the collector's access entry itself (API auth mode); a second one collides.
    types = {r["Type"] for r in dev.template_json(SUFFIX)["Resources"].values()}
    assert "AWS::IAM::Role" not in types
    assert "AWS::EKS::AccessEntry" not in types


def test_alert_topic_is_named_encrypted_and_scoped_to_the_workspace(dev: Synth) -> None:
    topic = one(dev, "AWS::SNS::Topic")
    assert topic["TopicName"] == topic_name(dev.config)
    assert "KmsMasterKeyId" in topic
    policy = one(dev, "AWS::SNS::TopicPolicy")["PolicyDocument"]["Statement"]
    (aps,) = [s for s in policy if s.get("Principal") == {"Service": "aps.amazonaws.com"}]
    assert sorted(aps["Action"]) == ["sns:GetTopicAttributes", "sns:Publish"]
    (ws_id,) = dev.resources(SUFFIX, "AWS::APS::Workspace")
    assert aps["Condition"]["ArnEquals"]["aws:SourceArn"] == {"Fn::GetAtt": [ws_id, "Arn"]}


def test_alert_manager_routes_to_the_topic(dev: Synth) -> None:
    definition = one(dev, "AWS::APS::Workspace")["AlertManagerDefinition"]
    (topic_id,) = dev.resources(SUFFIX, "AWS::SNS::Topic")
    assert {"Ref": topic_id} in definition["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else "TOPIC" for p in definition["Fn::Join"][1])
    inner = yaml.safe_load(yaml.safe_load(text)["alertmanager_config"])
    assert inner["receivers"][0]["sns_configs"][0]["topic_arn"] == "TOPIC"
    assert inner["receivers"][0]["sns_configs"][0]["sigv4"]["region"] == dev.config.region


def test_rule_groups_hold_the_four_alerts(dev: Synth) -> None:
    rules = yaml.safe_load(one(dev, "AWS::APS::RuleGroupsNamespace")["Data"])
    names = {r["alert"] for g in rules["groups"] for r in g["rules"]}
    assert {
        "KvCacheL2AboveHighWater",
        "KvCacheL2HitRateNearZero",
        "CurvineWorkerDown",
        "KvCacheTtftP95High",
    } <= names
    (high,) = [
        r for g in rules["groups"] for r in g["rules"] if r["alert"] == "KvCacheL2AboveHighWater"
    ]
    assert high["for"] == "15m"


def test_the_deployed_rule_group_is_the_one_the_alert_tests_evaluate(dev: Synth) -> None:
    """tests/k8s/test_alert_rules.py runs promtool on ``alert_rules_yaml(config)``: the rule
    group in the template is that text, unchanged."""
    assert one(dev, "AWS::APS::RuleGroupsNamespace")["Data"] == alert_rules_yaml(dev.config)


@needs_promtool
def test_prometheus_loads_the_deployed_rule_group(dev: Synth, tmp_path: Path) -> None:
    check_rules(one(dev, "AWS::APS::RuleGroupsNamespace")["Data"], tmp_path)


def test_existing_cluster_without_collector_network_has_no_scraper(existing: Synth) -> None:
    # The shared existing-cluster variant sets no scraper subnets: workspace and alerts only.
    assert existing.resources(SUFFIX, "AWS::APS::Workspace")
    assert not existing.resources(SUFFIX, "AWS::APS::Scraper")


def test_a_customer_managed_workspace_is_encrypted_with_the_stacks_key() -> None:
    """Accepted only where no managed collector is created (an existing cluster without the
    collector's network): the workspace takes the stack's key, and no scraper exists."""
    raw = existing_cluster_config().model_dump(mode="json", exclude={"network"})
    raw["observability"]["workspace_encryption"] = "customer_managed"
    config = parse_config(raw, "config/dev.yaml (customer managed workspace)", "dev")
    stack = Stack(new_app(), "Obs", env=Environment(account=config.account, region=config.region))
    assert config.existing_cluster is not None
    cluster_arn = (
        f"arn:aws:eks:us-west-2:111122223333:cluster/{config.existing_cluster.eks_cluster_name}"
    )
    Observability(
        stack,
        "Observability",
        config=config,
        cluster_arn=cluster_arn,
        subnet_ids=[],
        security_group_ids=[],
    )
    template = Template.from_stack(stack).to_json()["Resources"]
    (ws,) = [r["Properties"] for r in template.values() if r["Type"] == "AWS::APS::Workspace"]
    (key_id,) = [k for k, r in template.items() if r["Type"] == "AWS::KMS::Key"]
    assert ws["KmsKeyArn"] == {"Fn::GetAtt": [key_id, "Arn"]}
    assert not [r for r in template.values() if r["Type"] == "AWS::APS::Scraper"]
