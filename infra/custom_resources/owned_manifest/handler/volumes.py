"""After a delete: wait, bounded, for the volumes of the claims it deleted to be deleted.

A dynamically provisioned PersistentVolume with reclaim policy ``Delete`` goes only once its
provisioner (the Curvine CSI controller, which asks Curvine's masters to remove the directory)
has deleted it; until then it keeps the provisioner's finalizer. The stack deletes the L2 volume
chart before the CSI driver and Curvine (infra/constructs/kubernetes_layer.py), and this wait
makes "before" mean "once the volumes are gone", not only "once the claims were asked to go".
Never raises: a volume still there at the end, or an API error, is logged and the delete carries
on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes.client.exceptions import ApiException

from .cluster import Cluster
from .kinds import Ref


@dataclass(frozen=True)
class VolumeWait:
    """How long to wait (the function has 5 minutes in all) and how to tell time and sleep."""

    seconds: float = 180.0
    interval: float = 5.0
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep


def volume_ref(name: str) -> Ref:
    return Ref(api_version="v1", kind="PersistentVolume", name=name)


def _provisioned_volume(cluster: Cluster, claim: Ref, obj: Mapping[str, Any]) -> Ref | None:
    """The volume the claim was bound to, when its provisioner deletes it with the claim."""
    name = (obj.get("spec") or {}).get("volumeName")
    if not name:
        return None  # never bound: no volume
    ref = volume_ref(str(name))
    volume = cluster.get(ref)
    if volume is None:
        return None
    spec = volume.get("spec") or {}
    bound = spec.get("claimRef") or {}
    if (bound.get("namespace"), bound.get("name")) != (claim.namespace, claim.name):
        return None  # bound to another claim since: not this delete's
    if spec.get("persistentVolumeReclaimPolicy") != "Delete":
        return None  # Retain: the volume stays by design
    return ref


def wait_for_volumes(
    cluster: Cluster, claims: Sequence[tuple[Ref, Mapping[str, Any]]], wait: VolumeWait
) -> list[str]:
    """Wait until the volumes of ``claims`` (each as it was read before its delete) are gone,
    up to ``wait.seconds``; one line per volume, for the log."""
    try:
        pending = {
            v: c for c, obj in claims if (v := _provisioned_volume(cluster, c, obj)) is not None
        }
        if not pending:
            return []
        start = wait.clock()
        gone: list[str] = []
        while True:
            for v in [v for v in pending if cluster.get(v) is None]:
                c = pending.pop(v)
                gone.append(
                    f"{v} of claim {c.namespace}/{c.name} was deleted by its provisioner "
                    f"({wait.clock() - start:.0f}s)"
                )
            if not pending or wait.clock() - start >= wait.seconds:
                break
            wait.sleep(wait.interval)
    except ApiException as e:
        return [f"stopped waiting for the deleted claims' volumes: HTTP {e.status} {e.reason}"]
    return gone + [
        f"{v} of claim {c.namespace}/{c.name} is still there after {wait.seconds:.0f}s: its "
        f"provisioner has not deleted it; check `kubectl get pv {v.name}` and the CSI "
        "controller's log (left in place)"
        for v, c in pending.items()
    ]
