"""Amazon Managed Service for Prometheus for the cache tiers: a workspace with logging, the
agentless collector on the EKS cluster, the alert rules and a KMS-encrypted SNS alert topic.

The workspace is encrypted with AMP's own key unless ``observability.workspace_encryption`` is
``customer_managed`` (then with the stack's key, and config refuses a collector: the AMP user
guide says such a workspace cannot use managed collectors).

IAM: nothing here creates an IAM role. The collector runs as AMP's service-linked role
(``AWSServiceRoleForAmazonPrometheusScraper``), and on a cluster whose authentication mode
includes ``API`` AMP creates the collector's EKS access entry and its read-only Kubernetes
policy itself when the scraper is created (AMP user guide, AMP-collector-how-to, "Configure
Amazon EKS for scraper access with access entries"); a second access entry for the same role
would collide with it. The only grants written here are resource policies: the alert topic
lets ``aps.amazonaws.com`` publish for this workspace only, and the key lets AMP and SNS use
it for this account only.
"""

from __future__ import annotations

import base64

from aws_cdk import Annotations, Aws, RemovalPolicy
from aws_cdk import aws_aps as aps
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subs
from constructs import Construct

from infra.cdk.removal import removal_policy, retention
from infra.config import AppConfig
from infra.config.model import topic_name
from infra.constructs.network import Network
from infra.environment.amp_workspace import workspace_alias
from infra.metrics.alerts import alert_rules_yaml, alertmanager_definition
from k8s.observability import scrape_config_yaml


def collector_placement(config: AppConfig, network: Network | None) -> tuple[list[str], list[str]]:
    """The collector's subnets and security groups: the created network's, or the ids written
    in ``observability`` for an existing cluster."""
    obs = config.observability
    if network is not None:
        # The collector's interfaces go where the control plane's do (two AZs), in the
        # cluster security group, which admits all traffic from its own members (the nodes).
        subnets = [s.subnet_id for s in network.vpc.private_subnets]
        groups = [network.cluster_security_group.security_group_id]
    else:
        subnets = list(obs.scraper_subnet_ids)
        groups = list(obs.scraper_security_group_ids)
    return subnets, groups


class Observability(Construct):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        cluster_arn: str,
        subnet_ids: list[str],
        security_group_ids: list[str],
    ) -> None:
        super().__init__(scope, id)
        obs = config.observability
        alias = workspace_alias(config)
        self.key = kms.Key(
            self,
            "Key",
            description=f"Alert topic (and a customer managed AMP workspace) of "
            f"{config.stack_prefix}",
            enable_key_rotation=True,
            removal_policy=removal_policy(config),
        )
        for service in ("aps.amazonaws.com", "sns.amazonaws.com"):
            # AMP publishes alerts to the encrypted topic (and encrypts a customer managed
            # workspace); SNS decrypts what it delivers. Scoped to this account's requests.
            self.key.add_to_resource_policy(
                iam.PolicyStatement(
                    principals=[iam.ServicePrincipal(service)],
                    actions=["kms:GenerateDataKey*", "kms:Decrypt"],
                    resources=["*"],  # in a key policy, "*" is this key
                    conditions={"StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID}},
                )
            )
        self.log_group = logs.LogGroup(
            self,
            "WorkspaceLogs",
            log_group_name=f"/aws/vendedlogs/prometheus/{alias}",
            retention=retention(obs.log_retention_days),
            removal_policy=RemovalPolicy.DESTROY,
        )
        self.topic = sns.Topic(
            self,
            "AlertTopic",
            topic_name=topic_name(config),
            display_name=f"{config.stack_prefix} KV cache alerts",
            master_key=self.key,
            enforce_ssl=True,
        )
        for address in obs.alert_emails:
            self.topic.add_subscription(subs.EmailSubscription(address))
        self.workspace = aps.CfnWorkspace(
            self,
            "Workspace",
            alias=alias,
            # None: AMP's own key, the one a managed collector can write to.
            kms_key_arn=self.key.key_arn
            if obs.workspace_encryption == "customer_managed"
            else None,
            logging_configuration=aps.CfnWorkspace.LoggingConfigurationProperty(
                log_group_arn=self.log_group.log_group_arn
            ),
            alert_manager_definition=alertmanager_definition(config, self.topic.topic_arn),
        )
        self.workspace.node.add_dependency(self.key)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                sid="AmpAlertManagerPublish",
                principals=[iam.ServicePrincipal("aps.amazonaws.com")],
                actions=["sns:Publish", "sns:GetTopicAttributes"],
                resources=[self.topic.topic_arn],
                conditions={
                    "StringEquals": {"aws:SourceAccount": Aws.ACCOUNT_ID},
                    "ArnEquals": {"aws:SourceArn": self.workspace.attr_arn},
                },
            )
        )
        self.rules = aps.CfnRuleGroupsNamespace(
            self,
            "Rules",
            name="kvcache-tiers",
            workspace=self.workspace.attr_arn,
            data=alert_rules_yaml(config),
        )
        self.scraper: aps.CfnScraper | None = None
        if not subnet_ids:
            Annotations.of(self).add_warning_v2(
                "observability:no-collector",
                "no AMP collector: set observability.scraper_subnet_ids and "
                "scraper_security_group_ids for the existing cluster so metrics flow",
            )
        else:
            self.scraper = self._scraper(config, alias, cluster_arn, subnet_ids, security_group_ids)
        self.query_endpoint = self.workspace.attr_prometheus_endpoint

    def _scraper(
        self,
        config: AppConfig,
        alias: str,
        cluster_arn: str,
        subnet_ids: list[str],
        security_group_ids: list[str],
    ) -> aps.CfnScraper:
        blob = base64.b64encode(scrape_config_yaml(config).encode()).decode()
        return aps.CfnScraper(
            self,
            "Scraper",
            alias=alias,
            source=aps.CfnScraper.SourceProperty(
                eks_configuration=aps.CfnScraper.EksConfigurationProperty(
                    cluster_arn=cluster_arn,
                    subnet_ids=subnet_ids,
                    security_group_ids=security_group_ids,
                )
            ),
            destination=aps.CfnScraper.DestinationProperty(
                amp_configuration=aps.CfnScraper.AmpConfigurationProperty(
                    workspace_arn=self.workspace.attr_arn
                )
            ),
            scrape_configuration=aps.CfnScraper.ScrapeConfigurationProperty(
                configuration_blob=blob
            ),
        )
