"""Names of the Kubernetes objects and labels the charts create that code outside the charts
refers to: the operations CLI (scripts/) finds, checks and deletes them by these names.

One source: the chart modules import these names from here. Nothing here imports cdk8s, so the
CLI reads them without loading jsii, which starts Node.js (and fails where Node.js is absent).
"""

from __future__ import annotations

from infra.fsx_outputs import FsxVolume

# The labels every rendered object carries (k8s.common.labels): teardown deletes only objects
# that carry both values.
PART_OF_LABEL = "app.kubernetes.io/part-of"
PART_OF = "hyperpod-kvcache"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "cdk8s"

CURVINE_SC = "curvine-sc"  # the Curvine StorageClass (k8s.foundation)
PVC = "curvine-pvc"  # the L2 claim in each endpoint namespace on Curvine (k8s.l2_volume)
FSX_L2 = "fsx-l2"  # prefix of the FSx for Lustre L2 claim and volumes (k8s.l2_volume)
CSI_DRIVER = "curvine"  # the Curvine CSIDriver (k8s.csi)
POLICY = "hyperpod-kvcache-l2-curvine"  # the Kyverno ClusterPolicy (k8s.policy)
# The env variable the operator injects into the model container and the L2 rule rewrites.
REMOTE_URL_ENV = "LMCACHE_REMOTE_URL"


def fsx_claim(fsx: FsxVolume) -> str:
    """The L2 claim with ``kvcache.l2_backend: fsx_lustre``: named after the file system."""
    return f"{FSX_L2}-{fsx.file_system_id}"
