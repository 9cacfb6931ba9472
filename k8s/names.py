"""Names of the Kubernetes objects and labels the charts create that code outside the charts
refers to: the operations CLI (scripts/) finds, checks and deletes them by these names.

One source: the chart modules import these names from here. Nothing here imports cdk8s, so the
CLI reads them without loading jsii, which starts Node.js (and fails where Node.js is absent).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from infra.config import AppConfig
from infra.config.model import l2_pool_bytes
from infra.environment.fsx import FsxVolume

# The labels every rendered object carries (k8s.common.labels): teardown deletes only objects
# that carry both values.
PART_OF_LABEL = "app.kubernetes.io/part-of"
PART_OF = "hyperpod-kvcache"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "cdk8s"

# The label the inference operator puts on an endpoint's Pods, valued with the
# InferenceEndpointConfig's name (its Deployment selects them by it): what the L2 policy matches
# and what the collector scrapes by.
ENDPOINT_POD_LABEL = "app"

CURVINE_SC = "curvine-sc"  # the Curvine StorageClass (k8s.foundation)
PVC = "curvine-pvc"  # prefix of the L2 claim in each endpoint namespace on Curvine (curvine_claim)
STATIC_PV = "curvine-l2-static"  # prefix of the optional static volume on Curvine (k8s.l2_volume)
FSX_L2 = "fsx-l2"  # prefix of the FSx for Lustre L2 claim and volumes (k8s.l2_volume)
L2_POOL = "curvine-l2-pool"  # prefix of the volume and claim over the whole pool (k8s.l2_volume)
# The evictors: one per shared L2 pool, over all of it (k8s.l2_volume).
EVICTOR, FSX_EVICTOR = "curvine-l2-evictor", "fsx-l2-evictor"
CSI_DRIVER = "curvine"  # the Curvine CSIDriver (k8s.csi)
POLICY = "hyperpod-kvcache-l2-curvine"  # the Kyverno ClusterPolicy (k8s.policy)
# The env variable the operator injects into the model container and the L2 rule rewrites.
REMOTE_URL_ENV = "LMCACHE_REMOTE_URL"
# The GPU nodes' NVMe instance store, and the directory on it where Curvine's workers keep their
# data (k8s.curvine's hostPath). Operator 3.3+ can cache model weights there (its CRDs' default
# hostPath): an endpoint's weightsCache only when enabled (off by default), a
# ModelWeightsCacheConfig unless disabled (scripts.lib.weights_cache).
NVME_MOUNT = "/opt/dlami/nvme"
CURVINE_DATA_DIR = f"{NVME_MOUNT}/curvine-data"


def labels(name: str, component: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/component": component,
        PART_OF_LABEL: PART_OF,
        MANAGED_BY_LABEL: MANAGED_BY,
    }


@dataclass(frozen=True)
class Workload:
    """One workload's identity: its selector, its Pod labels and the selector of every Service in
    front of it all come from here, so they cannot diverge.

    ``selector`` defaults to the workload's name and ``part-of`` label. It may be given explicitly
    where an existing object's selector (immutable in Kubernetes) must be kept; a selector key
    that contradicts the standard labels is refused.
    """

    name: str
    component: str
    selector: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.selector:
            std = labels(self.name, self.component)
            keys = ("app.kubernetes.io/name", "app.kubernetes.io/part-of")
            object.__setattr__(self, "selector", {k: std[k] for k in keys})
        clash = {
            k: v
            for k, v in self.selector.items()
            if k in labels(self.name, self.component) and labels(self.name, self.component)[k] != v
        }
        if clash:
            raise ValueError(f"{self.name}: selector {clash} contradicts the standard labels")

    @property
    def match_labels(self) -> dict[str, str]:
        return dict(self.selector)

    @property
    def pod_labels(self) -> dict[str, str]:
        """The standard labels plus the selector: a superset of the selector by construction."""
        return {**labels(self.name, self.component), **self.selector}

    @property
    def labels(self) -> dict[str, str]:
        """Labels of the workload object itself."""
        return labels(self.name, self.component)


# Curvine's workloads (k8s.curvine); the CLI finds their Pods by the selectors.
CURVINE_MASTER, CURVINE_WORKER = "curvine-master", "curvine-worker"
MASTER_WL = Workload(CURVINE_MASTER, "master")
WORKER_WL = Workload(CURVINE_WORKER, "worker")


def curvine_claim_gib(app: AppConfig) -> int:
    """The size the L2 claim on Curvine asks for, in GiB: the static volume's nominal size, or
    the whole pool (every GPU node's worker capacity)."""
    static = app.kvcache.curvine.static_pv
    return static.size_gib if static.enabled else l2_pool_bytes(app, "curvine") // 2**30


def curvine_claim(app: AppConfig) -> str:
    """The L2 claim with ``kvcache.l2_backend: curvine``: named after its size,
    ``curvine-pvc-<GiB>gi``. The API server refuses to shrink a bound claim, and to grow one
    whose StorageClass lacks ``allowVolumeExpansion``, which curvine-sc must lack: Curvine's CSI
    driver resizes nothing (v0.4.1: no EXPAND_VOLUME controller capability,
    ControllerExpandVolume and NodeExpandVolume answer Unimplemented). So a pool of another size
    (more GPU nodes, another worker capacity) is a new claim, created by the same apply that
    prunes the old one, and the L2 policy mounts it in every Pod admitted after it."""
    return f"{PVC}-{curvine_claim_gib(app)}gi"


def curvine_static_volume(app: AppConfig) -> str:
    """The static PersistentVolume of ``kvcache.curvine.static_pv``, named after its size like
    its claim: a Retain volume stays Released once its claim goes, so the claim of a new size
    needs a volume of its own (on the same Curvine path, so the cache stays warm)."""
    return f"{STATIC_PV}-{curvine_claim_gib(app)}gi"


def is_curvine_claim(name: str) -> bool:
    """A name the L2 claim on Curvine has had: ``curvine-pvc-<GiB>gi`` (or plain ``curvine-pvc``,
    before claims were named after their size)."""
    return re.fullmatch(rf"{PVC}(-[0-9]+gi)?", name) is not None


def fsx_claim(fsx: FsxVolume) -> str:
    """The L2 claim with ``kvcache.l2_backend: fsx_lustre``: named after the file system."""
    return f"{FSX_L2}-{fsx.file_system_id}"


def vllm_job(namespace: str, endpoint: str) -> str:
    """The scrape job of an endpoint's vLLM Pods (k8s.observability), the ``job`` label of its
    series in the metrics store."""
    return f"vllm-{namespace}-{endpoint}"
