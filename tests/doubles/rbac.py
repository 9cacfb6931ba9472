"""The API server's RBAC authorizer, as far as ServiceAccount grants go: what an account may do
from the Roles, ClusterRoles and bindings given (kubernetes.io/docs/reference/access-authn-authz/
rbac/). Grants add up; nothing denies."""

from __future__ import annotations

from typing import Any

CLUSTER = "*"  # a grant of a ClusterRoleBinding: every namespace and the cluster scope


def granted(
    objs: list[dict[str, Any]], namespace: str, account: str
) -> dict[tuple[str, str, str], set[str]]:
    """What ServiceAccount ``namespace/account`` may do, from the bindings that name it: a
    ClusterRoleBinding grants its ClusterRole everywhere, a RoleBinding grants its Role (or a
    ClusterRole) in the binding's namespace only."""
    by_name = {
        (o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o
        for o in objs
        if o["kind"] in ("Role", "ClusterRole")
    }
    out: dict[tuple[str, str, str], set[str]] = {}
    for b in objs:
        if b["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        subject = {"kind": "ServiceAccount", "name": account, "namespace": namespace}
        if subject not in b.get("subjects", []):
            continue
        ref = b["roleRef"]
        assert ref["apiGroup"] == "rbac.authorization.k8s.io", ref
        binding_ns = b["metadata"].get("namespace", "")
        role_ns = binding_ns if ref["kind"] == "Role" else ""
        role = by_name.get((ref["kind"], role_ns, ref["name"]))
        assert role is not None, (
            f"{b['kind']} {b['metadata']['name']}: no {ref['kind']} {ref['name']}"
        )
        scope = CLUSTER if b["kind"] == "ClusterRoleBinding" else binding_ns
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    out.setdefault((scope, group, resource), set()).update(rule["verbs"])
    return out
