"""The node readiness gate: a custom resource that completes once the HyperPod nodes are up.

With ``NodeProvisioningMode: Continuous`` the HyperPod cluster is InService as soon as its
cluster-level resources are, before any instance joins. Everything that needs nodes (CoreDNS, the
EKS add-ons with Deployments, Kyverno, Curvine) depends on this gate instead of on the cluster.

The handler (``infra/handlers/node_gate``) polls DescribeCluster and ListClusterNodes until every
instance group's ``CurrentCount`` reaches its ``TargetCount`` and every node is ``Running``; the
groups and counts always come from DescribeCluster, so the same resource works on a cluster this
app created and on an existing one. It does **not** check that Kubernetes reports the nodes
``Ready``: that needs cluster credentials (an access entry) the Lambda does not have. A node that
is Running in HyperPod has passed its lifecycle script and joined, which is what schedulability
needs in practice; ``verify`` checks the Kubernetes side on a real cluster.

Bounded: the handler fails with its own message after ``HANDLER_DEADLINE``, before the Provider's
``TOTAL_TIMEOUT`` and CloudFormation's one-hour custom-resource limit. Delete is a no-op.

The handler uses the Lambda runtime's boto3: both APIs and every field it reads date from
HyperPod's launch, so no pinned boto3 is bundled (unlike Tiered Storage).
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
from constructs import Construct, Dependable, DependencyGroup

from infra.bundling import HandlerBundle
from infra.constructs.polling_provider import polling_provider
from infra.nag import acknowledge

HANDLER_DIR = Path(__file__).resolve().parents[2] / "infra" / "handlers" / "node_gate"
HANDLER_PACKAGE = HANDLER_DIR.name
RUNTIME = lambda_.Runtime.PYTHON_3_13
RESOURCE_TYPE = "Custom::HyperPodNodesReady"
# Well under CloudFormation's one-hour custom-resource limit: the handler gives up first with a
# message naming the groups, the Provider's state machine next, CloudFormation last.
HANDLER_DEADLINE = Duration.minutes(40)
TOTAL_TIMEOUT = Duration.minutes(45)
SERVICE_TIMEOUT = Duration.minutes(50)
QUERY_INTERVAL = Duration.seconds(30)
DEADLINE_ENV = "NODE_GATE_DEADLINE_SECONDS"  # read by the handler's index.py
# The handler package alone: it uses the Lambda runtime's boto3 (DescribeCluster and
# ListClusterNodes are old enough to be in it).
BUNDLE = HandlerBundle(HANDLER_DIR, ())


def handler_code() -> lambda_.Code:
    return BUNDLE.code()


class NodeReadinessGate(Construct):
    """``Custom::HyperPodNodesReady`` on one HyperPod cluster.

    ``cluster_arn`` scopes the IAM policy (ListClusterNodes, like DescribeCluster, authorizes on
    the ``cluster`` resource type). ``fingerprint`` (e.g. the instance groups' hash) makes
    CloudFormation run the gate again when the groups change.

    ``resource_scope`` (another stack) takes the custom resource and the cluster-scoped policy,
    as for Tiered Storage: the functions, roles and Provider do not reference the cluster, so
    they are built beside it while it is created and only the poll itself waits for it.
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster_name: str,
        cluster_arn: str,
        fingerprint: str = "",
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
        resource_scope: Construct | None = None,
    ) -> None:
        super().__init__(scope, id)

        def log_group(name: str) -> logs.LogGroup:
            return logs.LogGroup(
                self, name, retention=log_retention, removal_policy=RemovalPolicy.DESTROY
            )

        handler_logs = log_group("HandlerLogs")
        role = iam.Role(
            self,
            "HandlerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Node readiness gate: DescribeCluster/ListClusterNodes on one cluster",
        )
        # The cluster-scoped grant is its own policy that only the custom resource waits for.
        self.cluster_policy = iam.Policy(
            resource_scope or self,
            f"{id}ClusterAccess" if resource_scope else "ClusterAccess",
            roles=[role],
            statements=[
                iam.PolicyStatement(
                    sid="ReadClusterNodes",
                    actions=["sagemaker:DescribeCluster", "sagemaker:ListClusterNodes"],
                    resources=[cluster_arn],
                )
            ],
        )
        role.add_to_policy(
            iam.PolicyStatement(
                sid="WriteLogs",
                actions=["logs:CreateLogStream", "logs:PutLogEvents"],
                resources=[handler_logs.log_group_arn],
            )
        )
        code = handler_code()

        def function(name: str, entry: str, timeout: Duration) -> lambda_.Function:
            fn = lambda_.Function(
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
                description=f"HyperPod node readiness gate: {entry}",
            )
            fn.node.add_dependency(role)  # its policy must exist before CloudFormation invokes
            return fn

        self.on_event_function = function("OnEvent", "on_event", Duration.minutes(1))
        self.is_complete_function = function("IsComplete", "is_complete", Duration.minutes(2))
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
            resource_type=RESOURCE_TYPE,
            service_timeout=SERVICE_TIMEOUT,
            properties={
                "ClusterName": cluster_name,
                "ClusterArn": cluster_arn,
                "Fingerprint": fingerprint,
            },
        )
        self.resource.node.add_dependency(self.cluster_policy)
        # Depending on the gate means depending on the custom resource alone (not on every
        # function, role and log group of the Provider).
        Dependable.implement(self, Dependable.of(DependencyGroup(self.resource)))
        for fn in (self.on_event_function, self.is_complete_function):
            acknowledge(
                fn,
                "AwsSolutions-L1",
                f"{RUNTIME.name} is pinned on purpose; move RUNTIME in "
                "infra/constructs/node_gate.py to a newer one after a test deploy.",
            )
