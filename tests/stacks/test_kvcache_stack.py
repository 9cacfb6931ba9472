"""What the CDK stack deploys equals the YAML written to dist/<env>/ (synthesized template via
aws_cdk.assertions; no double). The cluster is imported by attributes with an imported kubectl
provider: the stack only needs its service token."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from aws_cdk import CfnWaitConditionHandle, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from infra.cdk.context import new_app
from infra.config import AppConfig, load_config
from k8s.render import render
from stacks.kvcache_stack import KvCacheStack

PRUNE = "aws.cdk.eks/prune-"


@pytest.fixture(scope="module")
def dev_config() -> AppConfig:
    return load_config("dev")


@pytest.fixture(scope="module")
def rendered_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Any]]:
    """What `make manifests` writes to dist/dev/ (a temporary lock directory: the committed
    lock stays as is)."""
    out = tmp_path_factory.mktemp("dist")
    paths = render("dev", out, lock_dir=tmp_path_factory.mktemp("locks"))
    return {p.stem: [o for o in yaml.safe_load_all(p.read_text()) if o] for p in paths}


@pytest.fixture(scope="module")
def template(dev_config: AppConfig) -> Template:
    app = new_app()
    ref = Stack(app, "ClusterRef")
    CfnWaitConditionHandle(ref, "NotEmpty")  # an empty stack fails CloudFormation's validation
    provider = eks.KubectlProvider.from_kubectl_provider_attributes(
        ref,
        "Provider",
        service_token="arn:aws:lambda:us-west-2:111122223333:function:kubectl",
        role=iam.Role.from_role_arn(ref, "Role", "arn:aws:iam::111122223333:role/kubectl"),
    )
    cluster = eks.Cluster.from_cluster_attributes(
        ref, "Cluster", cluster_name="hyperpod-kvcache-dev", kubectl_provider=provider
    )
    # Every chart, endpoints included (composition deploys those from the endpoints stack).
    stack = KvCacheStack(app, "KvCache", config=dev_config, cluster=cluster)
    return Template.from_stack(stack)


def _strip_prune(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {k: _strip_prune(v) for k, v in obj.items() if not k.startswith(PRUNE)}
    if isinstance(obj, list):
        return [_strip_prune(v) for v in obj]
    return obj


def _deployed(template: Template) -> dict[str, list[Any]]:
    res = template.find_resources("Custom::AWSCDK-EKS-KubernetesResource")
    out = {}
    for logical_id, r in res.items():
        manifest = r["Properties"]["Manifest"]
        out[logical_id] = _strip_prune(
            json.loads(manifest) if isinstance(manifest, str) else manifest
        )
    return out


def test_deployed_objects_equal_rendered_yaml(
    template: Template, rendered_files: dict[str, list[Any]]
) -> None:
    deployed = _deployed(template)
    by_name = {
        name: next(v for k, v in deployed.items() if k.startswith("K8s" + name.replace("-", "")))
        for name in rendered_files
    }
    assert len(deployed) == len(rendered_files)
    for name, objects in rendered_files.items():
        assert by_name[name] == objects, name


def test_apply_order(template: Template) -> None:
    resources = template.to_json()["Resources"]
    ids = {k: k for k in resources}

    def deps(prefix: str) -> set[str]:
        (lid,) = [k for k in ids if k.startswith(prefix)]
        return set(resources[lid].get("DependsOn", []))

    def one(prefix: str) -> str:
        (lid,) = [k for k in ids if k.startswith(prefix)]
        return lid

    # Only where apply or delete needs it: namespaces first, Kyverno's CRDs before its policy,
    # the L2 volume after what deletes its volumes (tests/stacks/test_rehearsal_waits.py); the
    # rest side by side (the endpoints' waits are pinned in tests/stacks/test_deploy_layout.py).
    namespaces = one("K8s00namespaces")
    assert deps("K8s00namespaces") == set()
    assert deps("Kyverno") == {namespaces}
    providers = ("K8s10storage", "K8s20curvine", "K8s25curvinenetworkpolicy", "K8s30curvinecsi")
    for prefix in providers:
        assert deps(prefix) == {namespaces}, prefix
    assert deps("K8s40l2volume") == {namespaces, *map(one, providers)}
    assert deps("K8s50l2policy") == {namespaces, one("Kyverno")}


def test_kyverno_chart_is_pinned(template: Template, dev_config: AppConfig) -> None:
    template.has_resource_properties(
        "Custom::AWSCDK-EKS-HelmChart",
        {
            "Chart": "kyverno",
            "Repository": "https://kyverno.github.io/kyverno/",
            "Version": dev_config.kvcache.kyverno.chart_version,
            "Namespace": "kyverno",
            "Wait": True,
        },
    )
