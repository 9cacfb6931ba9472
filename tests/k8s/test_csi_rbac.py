"""What the Curvine CSI driver's service accounts may do, as the API server's RBAC authorizer
would decide it from the rendered Roles, ClusterRoles and bindings (tests/doubles/rbac.py):
exactly what each component needs, no more.

Sources of the needs:
- the csi-provisioner sidecar (registry.k8s.io/sig-storage/csi-provisioner v3.6.0):
  kubernetes-csi/external-provisioner v3.6.0 ``deploy/kubernetes/rbac.yaml``, without what this
  chart does not turn on: snapshots (no snapshot data source), CSIStorageCapacity (no
  ``--enable-capacity``), VolumeAttachments (the driver has no PUBLISH_UNPUBLISH_VOLUME:
  ``attachRequired: false``), and the Pod/ReplicaSet reads that only capacity ownership uses;
- the Curvine plugin in the controller and on the nodes: CurvineIO/curvine-helm (commit
  adeb662) ``curvine-csi/templates/clusterrole.yaml``, without the Pod create/delete of the
  standalone mount mode (this chart mounts in the plugin: ``MOUNT_MODE=embedded``) and with only
  the verbs the embedded mode uses on its mount-state Secret, in the Curvine namespace;
- node-driver-registrar talks to the kubelet's socket only: no API access.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig
from k8s.csi import CONTROLLER, NODE
from tests.doubles.rbac import CLUSTER, granted

READ = {"get", "list", "watch"}

# (scope, apiGroup, resource) -> verbs; scope is CLUSTER or "curvine" (the chart's namespace).
CONTROLLER_NEEDS: dict[tuple[str, str, str], set[str]] = {
    # The provisioner creates and deletes the PVs it provisions; patch and update as Curvine's
    # chart grants them (the plugin's DeleteVolume looks the PV up).
    (CLUSTER, "", "persistentvolumes"): READ | {"create", "delete", "patch", "update"},
    # It watches claims and updates them (annotations of the provisioning in progress).
    (CLUSTER, "", "persistentvolumeclaims"): READ | {"update"},
    (CLUSTER, "storage.k8s.io", "storageclasses"): READ,
    # Topology: the nodes and their CSINode objects.
    (CLUSTER, "storage.k8s.io", "csinodes"): READ,
    (CLUSTER, "", "nodes"): READ,
    # client-go's event recorder creates events and patches repeated ones.
    (CLUSTER, "", "events"): READ | {"create", "patch"},
    # --leader-election: a Lease in its own namespace.
    ("curvine", "coordination.k8s.io", "leases"): READ | {"create", "update", "patch", "delete"},
}
NODE_NEEDS: dict[tuple[str, str, str], set[str]] = {
    (CLUSTER, "", "persistentvolumes"): READ,
    (CLUSTER, "", "events"): {"create", "patch"},
    # The embedded mount mode reads, creates and updates its node's mount-state Secret
    # (curvine-csi v0.4.1 pkg/csi/k8s_client.go, mount_state.go): no list, watch, patch or
    # delete, and no ConfigMaps (the standalone mode's).
    ("curvine", "", "secrets"): {"get", "create", "update"},
}


def _needs(
    needs: dict[tuple[str, str, str], set[str]], config: AppConfig
) -> dict[tuple[str, str, str], set[str]]:
    ns = config.kvcache.curvine.namespace
    return {(ns if scope == "curvine" else scope, g, r): v for (scope, g, r), v in needs.items()}


@pytest.mark.parametrize(("account", "needs"), [(CONTROLLER, CONTROLLER_NEEDS), (NODE, NODE_NEEDS)])
def test_each_csi_service_account_may_do_exactly_what_it_needs(
    rendered: list[dict[str, Any]],
    dev_config: AppConfig,
    account: str,
    needs: dict[tuple[str, str, str], set[str]],
) -> None:
    ns = dev_config.kvcache.curvine.namespace
    assert granted(rendered, ns, account) == _needs(needs, dev_config)


def test_the_csi_pods_run_as_the_accounts_granted_above(
    rendered: list[dict[str, Any]], dev_config: AppConfig
) -> None:
    """The grants above are worth something only if the driver's Pods use those accounts and get
    their tokens (both call the API server)."""
    ns = dev_config.kvcache.curvine.namespace
    pods = {
        o["metadata"]["name"]: o["spec"]["template"]["spec"]
        for o in rendered
        if o["kind"] in ("Deployment", "DaemonSet")
    }
    used = {
        name: (pods[name]["serviceAccountName"], pods[name]["automountServiceAccountToken"])
        for name in (CONTROLLER, NODE)
    }
    assert used == {CONTROLLER: (CONTROLLER, True), NODE: (NODE, True)}
    accounts = {
        (o["metadata"]["namespace"], o["metadata"]["name"])
        for o in rendered
        if o["kind"] == "ServiceAccount"
    }
    assert {(ns, CONTROLLER), (ns, NODE)} <= accounts


def test_a_binding_in_another_namespace_grants_nothing_here() -> None:
    """The evaluator itself: a RoleBinding's grant is scoped to its namespace, and a binding that
    names another account grants that account nothing."""
    role = {
        "kind": "Role",
        "metadata": {"name": "r", "namespace": "a"},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}],
    }
    binding = {
        "kind": "RoleBinding",
        "metadata": {"name": "b", "namespace": "a"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "x"}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
    }
    assert granted([role, binding], "x", "sa") == {("a", "", "secrets"): {"get"}}
    assert granted([role, binding], "x", "other") == {}
