"""A small evaluator of the Kyverno features the L2 policy uses, for tests.

Implements rule matching on ``match.any[].resources`` (kinds, operations, namespaces,
selector.matchLabels) and ``patchStrategicMerge`` the way Kyverno applies it to a Pod: maps merge
recursively; lists of containers, env and volumes merge by ``name``, volumeMounts by
``mountPath`` (their Kubernetes patch merge keys); a ``(key): value`` conditional anchor in a list
element makes the element apply only to existing elements whose ``key`` equals ``value`` (and
never adds a new one). The kyverno CLI is not on PyPI/npm, so it is not used here.
"""

from __future__ import annotations

import copy
from typing import Any

MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
              "volumeMounts": "mountPath", "ports": "containerPort"}  # fmt: skip


def matches(rule: dict[str, Any], obj: dict[str, Any], operation: str) -> bool:
    for block in rule["match"]["any"]:
        r = block["resources"]
        meta = obj["metadata"]
        labels = meta.get("labels", {})
        if (obj["kind"] in r.get("kinds", [])
                and operation in r.get("operations", ["CREATE", "UPDATE"])
                and ("namespaces" not in r or meta.get("namespace") in r["namespaces"])
                and all(labels.get(k) == v for k, v in
                        r.get("selector", {}).get("matchLabels", {}).items())):  # fmt: skip
            return True
    return False


def apply_policy(policy: dict[str, Any], obj: dict[str, Any], operation: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    for rule in policy["spec"]["rules"]:
        if matches(rule, out, operation) and "patchStrategicMerge" in rule.get("mutate", {}):
            out = merge(out, rule["mutate"]["patchStrategicMerge"])
    return out


def merge(target: Any, patch: Any, key: str | None = None) -> Any:
    if isinstance(patch, dict) and isinstance(target, dict):
        out = dict(target)
        for k, v in patch.items():
            out[k] = merge(target.get(k), v, k) if k in target else copy.deepcopy(v)
        return out
    if isinstance(patch, list) and isinstance(target, list) and key in MERGE_KEYS:
        return _merge_list(target, patch, MERGE_KEYS[key])
    return copy.deepcopy(patch)


def _merge_list(target: list[Any], patch: list[Any], mkey: str) -> list[Any]:
    out = [copy.deepcopy(t) for t in target]
    for p in patch:
        anchors = {k[1:-1]: v for k, v in p.items() if k.startswith("(") and k.endswith(")")}
        body = {k: v for k, v in p.items() if not (k.startswith("(") and k.endswith(")"))}
        if anchors:
            for i, t in enumerate(out):
                if all(t.get(k) == v for k, v in anchors.items()):
                    out[i] = merge(t, body)
            continue
        idx = next((i for i, t in enumerate(out) if t.get(mkey) == body.get(mkey)), None)
        if idx is None:
            out.append(copy.deepcopy(body))
        else:
            out[idx] = merge(out[idx], body)
    return out
