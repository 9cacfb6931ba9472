"""The Kubernetes service accounts the add-ons' IAM roles trust: one constant each.

Trust policies, pod identity associations and docs all read namespace and name from here, so a
role can never trust a service account that nothing runs as.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.config.operator_versions import OPERATOR_DEPLOYMENT, OPERATOR_NAMESPACE


@dataclass(frozen=True)
class ServiceAccount:
    namespace: str
    name: str

    @property
    def subject(self) -> str:
        """The ``sub`` claim of this service account's projected token."""
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    @property
    def is_pattern(self) -> bool:
        """Wildcards need ``StringLike`` in a trust condition."""
        return "*" in self.subject


S3_CSI = ServiceAccount("kube-system", "s3-csi-driver-sa")
EBS_CSI_CONTROLLER = ServiceAccount("kube-system", "ebs-csi-controller-sa")
FSX_CSI_CONTROLLER = ServiceAccount("kube-system", "fsx-csi-controller-sa")
INFERENCE_CONTROLLER = ServiceAccount(OPERATOR_NAMESPACE, OPERATOR_DEPLOYMENT)
# The operator creates one such service account per model namespace for gated JumpStart downloads;
# the role trusts it only in the namespaces the config deploys endpoints to.
GATED_MODEL_DOWNLOAD_NAME = "hyperpod-inference-service-account*"


def gated_model_download(namespace: str) -> ServiceAccount:
    """The gated-model download service account(s) the operator creates in ``namespace``."""
    return ServiceAccount(namespace, GATED_MODEL_DOWNLOAD_NAME)


ALB_CONTROLLER = ServiceAccount(OPERATOR_NAMESPACE, "aws-load-balancer-controller")
KEDA_OPERATOR = ServiceAccount(OPERATOR_NAMESPACE, "keda-operator")
