"""Which Pods run as root, and why each may: every Pod we render runs as a non-root user except
those whose work needs root, each named here with its reason. Pod Security's own check
(tests/doubles/pod_security.py, restricted's "Running as Non-root") decides.

- Curvine worker: writes its cache to the node's NVMe through a hostPath directory owned by root
  on the host (fsGroup does not apply to hostPath).
- CSI node plugin: privileged, it mounts FUSE into the kubelet's directories; its
  node-driver-registrar writes its socket into the kubelet's root-owned plugin registry.
- L2 evictor: deletes the files vLLM (root in its image) writes through the L2 mount (on Curvine
  from Curvine's namespace, over the whole pool; on FSx from the first endpoint namespace).
"""

from __future__ import annotations

from typing import Any

import pytest

from k8s.common import NON_ROOT_ID
from tests.doubles.pod_security import violations
from tests.support.admission import pod_templates

ENVS = ("dev", "test", "prod", "fsx", "tiers")  # fsx, tiers: tests/support/config.py

ROOT_BY_DESIGN = {
    "DaemonSet curvine/curvine-worker",
    "DaemonSet curvine/curvine-csi-node",
    "CronJob curvine/curvine-l2-evictor",
    "CronJob inference/fsx-l2-evictor",
}


def _root(spec: dict[str, Any]) -> bool:
    return any(v.startswith("Running as Non-root") for v in violations(spec, "restricted"))


@pytest.mark.parametrize("env", ENVS)
def test_only_the_pods_whose_work_needs_root_run_as_root(
    rendered_envs: dict[str, list[dict[str, Any]]], env: str
) -> None:
    pods = pod_templates(rendered_envs[env])
    as_root = {ref for ref, _, spec in pods if _root(spec)}
    assert as_root <= ROOT_BY_DESIGN, as_root - ROOT_BY_DESIGN
    curvine = {"StatefulSet curvine/curvine-master", "Deployment curvine/curvine-csi-controller"}
    rendered_curvine = {ref for ref, _, _ in pods} & curvine
    assert not rendered_curvine & as_root


def _spec(objs: list[dict[str, Any]], ref: str) -> dict[str, Any]:
    (spec,) = [s for r, _, s in pod_templates(objs) if r == ref]
    return spec


def test_the_master_owns_its_volumes_as_the_user_it_runs_as(
    rendered: list[dict[str, Any]],
) -> None:
    """Its metadata and journal volumes were written by root before: fsGroup regroups them to
    the user the master now runs as, so it can still write them."""
    psc = _spec(rendered, "StatefulSet curvine/curvine-master")["securityContext"]
    assert psc["runAsUser"] == psc["fsGroup"] == NON_ROOT_ID
    assert psc["runAsNonRoot"] is True


def test_the_csi_controllers_containers_share_one_user_for_their_socket(
    rendered: list[dict[str, Any]],
) -> None:
    """The plugin creates the CSI socket, the provisioner connects to it: one user, both sides."""
    spec = _spec(rendered, "Deployment curvine/curvine-csi-controller")
    users = {c.get("securityContext", {}).get("runAsUser") for c in spec["containers"]}
    assert users == {None} and spec["securityContext"]["runAsUser"] == NON_ROOT_ID
