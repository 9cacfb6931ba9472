"""HyperPod Tiered Storage as a custom resource: the single owner of ``TieredStorageConfig``.

The ``CfnCluster`` never sets that field; this resource calls DescribeCluster/UpdateCluster through
the Provider framework (the Lambda package ``handler/`` beside this file), re-runs whenever the
instance groups' hash changes, and in existing-cluster mode puts the previous config back on
Delete.

``TieredStorageProvider`` (functions, role, state machine, logs) is built beside the cluster, in
the HyperPod stack, while the cluster is created; ``TieredStorage`` (the UpdateCluster call and
its cluster-scoped IAM policy) in the tiered-storage stack, so nothing but the endpoints waits for
the ~15 minute update.

The handler ships with the boto3/botocore pinned in requirements.txt (the Lambda runtime's own
boto3 may predate TieredStorageConfig), copied from this virtualenv by a local bundler: no Docker,
no network, and the same bytes (so the same asset hash) on every synth.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import (
    CustomResource,
    Duration,
    RemovalPolicy,
)
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.config.tiered_storage import TieredStorageConfig
from infra.custom_resources.provider import HandlerBundle, PollingHandler, PollingProvider

HANDLER_DIR = Path(__file__).resolve().parent / "handler"
HANDLER_PACKAGE = "tiered_storage"  # the handlers are tiered_storage.index.<entry>
# boto3 and everything it imports at run time (all pure Python, so the synth host's copies run
# on the Lambda runtime whatever its architecture).
BUNDLED_DISTRIBUTIONS = (
    "boto3",
    "botocore",
    "s3transfer",
    "jmespath",
    "python-dateutil",
    "six",
    "urllib3",
)
# CloudFormation waits at most one hour for a custom resource (ServiceTimeout <= 3600 s), so the
# Provider's budget is one hour and the handler gives up 10 minutes earlier with its own message.
TOTAL_TIMEOUT = Duration.hours(1)
HANDLER_DEADLINE = Duration.minutes(50)
QUERY_INTERVAL = Duration.seconds(30)
DEADLINE_ENV = "TIERED_STORAGE_DEADLINE_SECONDS"  # read by the handler's index.py


# The handler only ever creates a SageMaker client: botocore's other ~450 service models (and
# boto3's resource models) are left out, which makes the package and every synth much smaller.
BOTOCORE_SERVICES = frozenset({"sagemaker"})


def _skip(relative: Path) -> bool:
    parts = relative.parts
    if parts[:2] == ("botocore", "data") and len(parts) > 3:
        return parts[2] not in BOTOCORE_SERVICES  # keeps data/*.json (endpoints, partitions)
    return parts[:2] == ("boto3", "data")


# The handler package plus the pinned boto3 and its dependencies.
BUNDLE = HandlerBundle(HANDLER_DIR, HANDLER_PACKAGE, BUNDLED_DISTRIBUTIONS, _skip)
bundle = BUNDLE.write

HANDLER = PollingHandler(
    bundle=BUNDLE,
    role_description="Tiered Storage custom resource: DescribeCluster/UpdateCluster one cluster",
    function_description="HyperPod Tiered Storage custom resource",
    on_event_timeout=Duration.minutes(5),
    is_complete_timeout=Duration.minutes(2),
    environment={DEADLINE_ENV: str(int(HANDLER_DEADLINE.to_seconds()))},
    query_interval=QUERY_INTERVAL,
    total_timeout=TOTAL_TIMEOUT,
)


class TieredStorageProvider(PollingProvider):
    """The Provider of ``Custom::HyperPodTieredStorage``: one per environment, in the HyperPod
    stack. It references no cluster; ``TieredStorage`` grants its role the cluster."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        log_removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
    ) -> None:
        super().__init__(
            scope,
            id,
            handler=HANDLER,
            log_retention=log_retention,
            log_removal_policy=log_removal_policy,
        )


class TieredStorage(Construct):
    """Custom::HyperPodTieredStorage on one HyperPod cluster, through ``provider``.

    ``cluster_name``/``cluster_arn`` may be tokens of the created ``CfnCluster`` (then add
    ``resource.node.add_dependency(cfn_cluster)``) or plain strings of an existing cluster, where
    ``restore_on_delete=True`` puts its previous TieredStorageConfig back when the stack goes.

    The custom resource is this construct's ``Default`` child, so its logical ID is this
    construct's path (``TieredStorage`` at the top of a stack).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        provider: TieredStorageProvider,
        cluster_name: str,
        cluster_arn: str,
        config: TieredStorageConfig,
        instance_groups_hash: str,
        restore_on_delete: bool,
    ) -> None:
        super().__init__(scope, id)
        # UpdateCluster is called with ClusterName, TieredStorageConfig and NodeRecovery only: no
        # role ARN travels in the request, so no iam:PassRole is needed. The cluster-scoped grant
        # is its own policy that only the custom resource waits for: the functions and the
        # Provider framework do not reference the cluster, so they are built while it is created.
        self.cluster_policy = iam.Policy(
            self,
            "ClusterAccess",
            roles=[provider.role],
            statements=[
                iam.PolicyStatement(
                    actions=["sagemaker:DescribeCluster", "sagemaker:UpdateCluster"],
                    resources=[cluster_arn],
                )
            ],
        )
        self.resource = CustomResource(
            self,
            "Default",
            service_token=provider.service_token,
            resource_type="Custom::HyperPodTieredStorage",
            service_timeout=TOTAL_TIMEOUT,
            # Strings, as CloudFormation delivers them anyway; the handler converts and checks.
            properties={
                "ClusterName": cluster_name,
                "Mode": config.mode,
                "InstanceMemoryAllocationPercentage": str(
                    config.instance_memory_allocation_percentage
                ),
                "InstanceGroupsHash": instance_groups_hash,
                "RestoreOnDelete": "true" if restore_on_delete else "false",
            },
        )
        self.resource.node.add_dependency(self.cluster_policy)
