"""HyperPod Tiered Storage as a custom resource: the single owner of ``TieredStorageConfig``.

The ``CfnCluster`` never sets that field; this resource calls DescribeCluster/UpdateCluster through
the Provider framework (``infra/handlers/tiered_storage``), re-runs whenever the instance groups'
hash changes, and in existing-cluster mode puts the previous config back on Delete.

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
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.bundling import HandlerBundle
from infra.config.tiered_storage import TieredStorageConfig
from infra.constructs.polling_provider import polling_provider
from infra.nag import acknowledge

REPO_ROOT = Path(__file__).resolve().parents[2]
HANDLER_DIR = REPO_ROOT / "infra" / "handlers" / "tiered_storage"
HANDLER_PACKAGE = HANDLER_DIR.name
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
# Lambda Python 3.12+ puts the function's own packages ahead of the runtime's boto3.
RUNTIME = lambda_.Runtime.PYTHON_3_13
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
BUNDLE = HandlerBundle(HANDLER_DIR, BUNDLED_DISTRIBUTIONS, _skip)
bundle = BUNDLE.write


def handler_code() -> lambda_.Code:
    return BUNDLE.code()


class TieredStorage(Construct):
    """Custom::HyperPodTieredStorage on one HyperPod cluster.

    ``cluster_name``/``cluster_arn`` may be tokens of the created ``CfnCluster`` (then add
    ``resource.node.add_dependency(cfn_cluster)``) or plain strings of an existing cluster, where
    ``restore_on_delete=True`` puts its previous TieredStorageConfig back when the stack goes.

    ``resource_scope`` (another stack) takes the custom resource and the cluster-scoped policy,
    so the Provider is built beside the cluster and only the UpdateCluster call waits for it.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster_name: str,
        cluster_arn: str,
        config: TieredStorageConfig,
        instance_groups_hash: str,
        restore_on_delete: bool,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        log_removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
        resource_scope: Construct | None = None,
    ) -> None:
        super().__init__(scope, id)

        def log_group(name: str) -> logs.LogGroup:
            return logs.LogGroup(
                self, name, retention=log_retention, removal_policy=log_removal_policy
            )

        handler_logs = log_group("HandlerLogs")
        role = iam.Role(
            self,
            "HandlerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Tiered Storage custom resource: DescribeCluster/UpdateCluster one cluster",
        )
        # UpdateCluster is called with ClusterName, TieredStorageConfig and NodeRecovery only: no
        # role ARN travels in the request, so no iam:PassRole is needed. The cluster-scoped grant
        # is its own policy that only the custom resource waits for: the functions and the
        # Provider framework do not reference the cluster, so they are built while it is created.
        self.cluster_policy = iam.Policy(
            resource_scope or self,
            f"{id}ClusterAccess" if resource_scope else "ClusterAccess",
            roles=[role],
            statements=[
                iam.PolicyStatement(
                    actions=["sagemaker:DescribeCluster", "sagemaker:UpdateCluster"],
                    resources=[cluster_arn],
                )
            ],
        )
        role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[handler_logs.log_group_arn],
            )
        )
        code = handler_code()

        def function(name: str, entry: str, timeout: Duration) -> lambda_.Function:
            return lambda_.Function(
                self,
                name,
                runtime=RUNTIME,
                architecture=lambda_.Architecture.ARM_64,
                handler=f"{HANDLER_PACKAGE}.index.{entry}",
                code=code,
                role=role,
                timeout=timeout,
                memory_size=256,
                log_group=handler_logs,
                environment={DEADLINE_ENV: str(int(HANDLER_DEADLINE.to_seconds()))},
                description=f"HyperPod Tiered Storage custom resource: {entry}",
            )

        self.on_event_function = function("OnEvent", "on_event", Duration.minutes(5))
        self.is_complete_function = function("IsComplete", "is_complete", Duration.minutes(2))
        # The role's policy must exist before CloudFormation may invoke the functions.
        for fn in (self.on_event_function, self.is_complete_function):
            fn.node.add_dependency(role)

        self.provider = polling_provider(
            self,
            on_event=self.on_event_function,
            is_complete=self.is_complete_function,
            query_interval=QUERY_INTERVAL,
            total_timeout=TOTAL_TIMEOUT,
            log_group=log_group,
        )
        self.resource = CustomResource(
            resource_scope or self,
            id if resource_scope else "Resource",
            service_token=self.provider.service_token,
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
        self._acknowledge_nag_findings()

    def _acknowledge_nag_findings(self) -> None:
        """cdk-nag findings on this construct's own resources, each with its reason.

        The Provider framework's functions, roles and waiter policies are CDK-generated and are
        acknowledged with the other CDK internals (infra/nag_cdk_internals.py).
        """
        for fn in (self.on_event_function, self.is_complete_function):
            acknowledge(
                fn,
                "AwsSolutions-L1",
                f"{RUNTIME.name} is pinned on purpose (3.12+ puts the function's bundled boto3 "
                "ahead of the runtime's); move RUNTIME in infra/constructs/tiered_storage.py to a "
                "newer one after a test deploy.",
            )
