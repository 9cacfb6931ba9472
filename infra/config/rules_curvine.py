"""Rules on Curvine's own settings and the one NVMe disk its workers share with the inference
operator's weights cache."""

from __future__ import annotations

import posixpath

from infra.config.curvine import CURVINE_FS_PATH, MIN_WORKER_CAPACITY_GIB
from infra.config.errors import RuleViolation
from infra.config.model import AppConfig
from infra.facts.instances import GPU_INSTANCES


def check_curvine(app: AppConfig) -> None:
    """Curvine's settings agree with each other, fit the GPU node's NVMe and keep a namespace
    of their own; raise RuleViolation(field=...)."""
    kv = app.kvcache
    cv = kv.curvine
    if cv.evictor.low_water_percent >= cv.evictor.high_water_percent:
        raise RuleViolation(
            f"less than high_water_percent ({cv.evictor.high_water_percent})",
            "lower low_water_percent",
            field="kvcache.curvine.evictor.low_water_percent",
            value=cv.evictor.low_water_percent,
        )
    if cv.fuse.memory_limit_mib < cv.fuse.memory_request_mib:
        raise RuleViolation(
            f"at least memory_request_mib ({cv.fuse.memory_request_mib})",
            "raise memory_limit_mib",
            field="kvcache.curvine.fuse.memory_limit_mib",
            value=cv.fuse.memory_limit_mib,
        )
    if cv.fuse.cpu_limit_millicores < cv.fuse.cpu_request_millicores:
        raise RuleViolation(
            f"at least cpu_request_millicores ({cv.fuse.cpu_request_millicores})",
            "raise cpu_limit_millicores",
            field="kvcache.curvine.fuse.cpu_limit_millicores",
            value=cv.fuse.cpu_limit_millicores,
        )
    if cv.worker.reserved_gib >= cv.worker.capacity_gib:
        raise RuleViolation(
            f"less than capacity_gib ({cv.worker.capacity_gib}): Curvine keeps it free out of "
            "the capacity",
            "lower kvcache.curvine.worker.reserved_gib",
            field="kvcache.curvine.worker.reserved_gib",
            value=cv.worker.reserved_gib,
        )
    inst = GPU_INSTANCES.get(app.hyperpod.gpu_group.instance_type)
    if "curvine" in kv.l2_backends and inst is not None:
        # Curvine's data and the operator's weights cache share the one NVMe mount. The reserve
        # is kept out of the capacity (Curvine v0.4.1 VfsDir::available: capacity - used -
        # reserved), so the disk holds capacity and the weights cache, no more.
        w, nvme_gib = cv.worker, inst.nvme_gb * 10**9 // 2**30
        if w.capacity_gib + w.weights_cache_gib > nvme_gib:
            left = nvme_gib - w.weights_cache_gib
            raise RuleViolation(
                f"capacity + weights_cache_gib <= {nvme_gib} GiB (local NVMe of "
                f"{app.hyperpod.gpu_group.instance_type}; reserved_gib is part of the capacity), "
                f"here {w.capacity_gib} + {w.weights_cache_gib} = "
                f"{w.capacity_gib + w.weights_cache_gib}",
                f"lower kvcache.curvine.worker.capacity_gib to {left}"
                if left >= MIN_WORKER_CAPACITY_GIB
                else "lower kvcache.curvine.worker.weights_cache_gib",
                field="kvcache.curvine.worker.capacity_gib",
                value=w.capacity_gib,
            )
    static = cv.static_pv
    if "curvine" in kv.l2_backends and static.enabled and not _under_pool(static.curvine_path):
        raise RuleViolation(
            f"{CURVINE_FS_PATH} or a path under it: the pool's one evictor keeps everything under "
            f"{CURVINE_FS_PATH} within what Curvine can hold, and nothing outside it",
            f"set it to {CURVINE_FS_PATH}/static",
            field="kvcache.curvine.static_pv.curvine_path",
            value=static.curvine_path,
        )
    if cv.namespace in {e.namespace for e in kv.endpoints} | {kv.kyverno.namespace}:
        raise RuleViolation(
            "a namespace of its own (the only privileged one)",
            "use different namespaces for Curvine, Kyverno and the endpoints",
            field="kvcache.curvine.namespace",
            value=cv.namespace,
        )


def _under_pool(path: str) -> bool:
    normal = posixpath.normpath(path)
    return normal == CURVINE_FS_PATH or normal.startswith(f"{CURVINE_FS_PATH}/")
