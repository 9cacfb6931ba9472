"""Whether the inference operator caches model weights on the NVMe Curvine's workers fill.

Operator 3.3 and later cache an endpoint's weights on each node at a host path
(``spec.modelCacheConfig.weightsCache`` of an InferenceEndpointConfig, off unless enabled, or a
``ModelWeightsCacheConfig``, on unless disabled), ``/opt/dlami/nvme`` unless set: the GPU nodes'
instance store, where Curvine's workers keep the L2 pool. Nothing bounds the cache's size. This
app renders no weights cache; on an existing cluster the owner's endpoints may, and then the disk
holds both only if ``kvcache.curvine.worker.weights_cache_gib`` budgets the weights (the config
rule sizes capacity, its reserve inside it, plus that against the instance's NVMe). ``preflight``
asks before a deploy on an existing cluster, ``verify`` after any deploy (an owner may add a
cache later).
"""

from __future__ import annotations

import posixpath
from typing import Any

from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from infra.facts.instances import GPU_INSTANCES
from k8s.names import CURVINE_DATA_DIR, NVME_MOUNT
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.endpoints import IEC_GROUP, IEC_PLURAL, IEC_VERSION
from scripts.lib.errors import OperationError

STAGE = "weights cache on Curvine's NVMe"
MWCC_PLURAL = "modelweightscacheconfigs"  # same group and version as the endpoints (operator 3.3)
FIELD = "kvcache.curvine.worker.weights_cache_gib"


def _under(path: str, root: str) -> bool:
    path = posixpath.normpath(path)
    return path == root or path.startswith(root + "/")


def _list(clients: Clients, plural: str) -> list[dict[str, Any]]:
    try:
        answer = clients.custom().list_cluster_custom_object(IEC_GROUP, IEC_VERSION, plural)
    except ApiException as exc:
        if exc.status == 404:  # the operator predates this resource (ModelWeightsCacheConfig: 3.3)
            return []
        raise
    return list(answer.get("items") or [])


def weights_caches(clients: Clients) -> list[tuple[str, str]]:
    """(``Kind namespace/name``, host path) of every enabled weights cache in the cluster, with
    the CRD defaults the API server would have filled in."""
    found = []
    for iec in _list(clients, IEC_PLURAL):
        cache = ((iec.get("spec") or {}).get("modelCacheConfig") or {}).get("weightsCache") or {}
        if cache.get("enabled", False):
            found.append(("InferenceEndpointConfig", iec, cache.get("hostPath", NVME_MOUNT)))
    for mwcc in _list(clients, MWCC_PLURAL):
        spec = mwcc.get("spec") or {}
        if spec.get("enabled", True):
            found.append(("ModelWeightsCacheConfig", mwcc, spec.get("hostPath", NVME_MOUNT)))
    return [
        (f"{kind} {obj['metadata'].get('namespace')}/{obj['metadata']['name']}", path)
        for kind, obj, path in found
    ]


def check_weights_cache(clients: Clients, cfg: AppConfig) -> Check:
    """Fails on a weights cache inside Curvine's data directory, and on one elsewhere on the
    NVMe while ``weights_cache_gib`` is 0; the numbers say what the disk holds."""
    if "curvine" not in cfg.kvcache.l2_backends:
        return Check(STAGE, "skip", "no endpoint's L2 is curvine: the NVMe holds no L2 pool")
    try:
        caches = weights_caches(clients)
    except (ApiException, OperationError) as exc:
        why = f"Kubernetes API: {exc.status} {exc.reason}" if isinstance(exc, ApiException) else exc
        return Check(
            STAGE,
            "warn",
            f"cannot list the operator's weights caches ({why})",
            "aws eks update-kubeconfig --name <cluster> --region <region>, then run it again",
        )
    on_disk = [(name, path) for name, path in caches if _under(path, NVME_MOUNT)]
    if not on_disk:
        return Check(STAGE, "pass", f"no weights cache under {NVME_MOUNT}")
    listed = ", ".join(f"{name} at {path}" for name, path in on_disk)
    inside = [(name, path) for name, path in on_disk if _under(path, CURVINE_DATA_DIR)]
    if inside:
        return Check(
            STAGE,
            "fail",
            f"{', '.join(name for name, _ in inside)} writes weights inside Curvine's worker "
            f"data {CURVINE_DATA_DIR}",
            f"set its hostPath outside {CURVINE_DATA_DIR}",
        )
    w = cfg.kvcache.curvine.worker
    itype = cfg.hyperpod.gpu_group.instance_type
    nvme_gib = GPU_INSTANCES[itype].nvme_gb * 10**9 // 2**30
    sizes = (
        f"{itype} NVMe {nvme_gib} GiB: Curvine capacity {w.capacity_gib} (its reserve "
        f"{w.reserved_gib} inside it) + weights cache {w.weights_cache_gib} GiB"
    )
    if w.weights_cache_gib == 0:
        return Check(
            STAGE,
            "fail",
            f"{listed}: on the disk Curvine's workers fill, with no room budgeted ({sizes})",
            f"set {FIELD} to the size of the weights cached per node (at most "
            f"{nvme_gib - w.capacity_gib} with this capacity), or set their "
            f"hostPath off {NVME_MOUNT}",
        )
    return Check(STAGE, "pass", f"{listed}; budgeted ({sizes})")
