"""The node readiness gate: a custom resource that completes once the HyperPod nodes are up.

With ``NodeProvisioningMode: Continuous`` the HyperPod cluster is InService as soon as its
cluster-level resources are, before any instance joins. Everything that needs nodes (CoreDNS, the
EKS add-ons with Deployments, Kyverno, Curvine) depends on this gate instead of on the cluster.

The handler (the Lambda package ``handler/`` beside this file) polls DescribeCluster and
ListClusterNodes until every instance group's ``CurrentCount`` reaches its ``TargetCount`` and
every node is ``Running``; the groups and counts always come from DescribeCluster, so the same
resource works on a cluster this app created and on an existing one. It does **not** check that
Kubernetes reports the nodes ``Ready``: that needs cluster credentials (an access entry) the
Lambda does not have. A node that is Running in HyperPod has passed its lifecycle script and
joined, which is what schedulability needs in practice; ``verify`` checks the Kubernetes side on
a real cluster.

Bounded: the handler fails with its own message after ``HANDLER_DEADLINE``, before the Provider's
``TOTAL_TIMEOUT`` and CloudFormation's one-hour custom-resource limit. Delete is a no-op.

The handler uses the Lambda runtime's boto3: both APIs and every field it reads date from
HyperPod's launch, so no pinned boto3 is bundled (unlike Tiered Storage).

``NodeGateProvider`` (functions, role, state machine, logs) is built beside the cluster, in the
HyperPod stack, while the cluster is created; ``NodeReadinessGate`` (the custom resource and its
cluster-scoped policy) in the nodes stack, so only the poll itself waits for the cluster.
"""

from __future__ import annotations

from pathlib import Path

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct, Dependable, DependencyGroup

from infra.custom_resources.provider import HandlerBundle, PollingHandler, PollingProvider

HANDLER_DIR = Path(__file__).resolve().parent / "handler"
HANDLER_PACKAGE = "node_gate"  # the handlers are node_gate.index.<entry>
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
BUNDLE = HandlerBundle(HANDLER_DIR, HANDLER_PACKAGE, ())

HANDLER = PollingHandler(
    bundle=BUNDLE,
    role_description="Node readiness gate: DescribeCluster/ListClusterNodes on one cluster",
    function_description="HyperPod node readiness gate",
    on_event_timeout=Duration.minutes(1),
    is_complete_timeout=Duration.minutes(2),
    environment={DEADLINE_ENV: str(int(HANDLER_DEADLINE.to_seconds()))},
    query_interval=QUERY_INTERVAL,
    total_timeout=TOTAL_TIMEOUT,
    log_statement_sid="WriteLogs",
)


class NodeGateProvider(PollingProvider):
    """The Provider of ``Custom::HyperPodNodesReady``: one per environment, in the HyperPod
    stack. It references no cluster; ``NodeReadinessGate`` grants its role the cluster."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
    ) -> None:
        super().__init__(scope, id, handler=HANDLER, log_retention=log_retention)


class NodeReadinessGate(Construct):
    """``Custom::HyperPodNodesReady`` on one HyperPod cluster, through ``provider``.

    ``cluster_arn`` scopes the IAM policy (ListClusterNodes, like DescribeCluster, authorizes on
    the ``cluster`` resource type). ``fingerprint`` (e.g. the instance groups' hash) makes
    CloudFormation run the gate again when the groups change.

    The custom resource is this construct's ``Default`` child, so its logical ID is this
    construct's path (``NodesReadyGate`` at the top of a stack).
    """

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        provider: NodeGateProvider,
        cluster_name: str,
        cluster_arn: str,
        fingerprint: str = "",
    ) -> None:
        super().__init__(scope, id)
        # The cluster-scoped grant is its own policy that only the custom resource waits for.
        self.cluster_policy = iam.Policy(
            self,
            "ClusterAccess",
            roles=[provider.role],
            statements=[
                iam.PolicyStatement(
                    sid="ReadClusterNodes",
                    actions=["sagemaker:DescribeCluster", "sagemaker:ListClusterNodes"],
                    resources=[cluster_arn],
                )
            ],
        )
        self.resource = CustomResource(
            self,
            "Default",
            service_token=provider.service_token,
            resource_type=RESOURCE_TYPE,
            service_timeout=SERVICE_TIMEOUT,
            properties={
                "ClusterName": cluster_name,
                "ClusterArn": cluster_arn,
                "Fingerprint": fingerprint,
            },
        )
        self.resource.node.add_dependency(self.cluster_policy)
        # Depending on the gate means depending on the custom resource alone (not on its policy).
        Dependable.implement(self, Dependable.of(DependencyGroup(self.resource)))
