"""A small evaluator of exactly the Kyverno features the L2 policy uses, for tests.

Semantics implemented, from the Kyverno 1.18 documentation (kyverno.io/docs/writing-policies/
mutate/, sections "Strategic Merge Patch" and "foreach"; preconditions: kyverno.io/docs/
writing-policies/preconditions/):

- ``match.any[].resources``: kinds, operations, namespaces and ``selector.matchLabels`` must all
  hold for one block.
- ``mutate.patchStrategicMerge``: maps merge recursively; lists with a Kubernetes patch merge key
  (containers, env and volumes by ``name``, volumeMounts by ``mountPath``) merge element by
  element, other lists are replaced; a ``(key): value`` conditional anchor makes a list element
  apply only to existing elements whose ``key`` equals ``value``.
- ``mutate.foreach``: ``list`` is evaluated against the admission request (only
  ``request.object.spec.containers`` is supported); for each ``element``, ``preconditions.all``
  must hold, then ``{{ element.name }}`` is substituted in the patch, which is merged into the
  object as patched by the previous iterations.
- Preconditions: only the key form the policy uses,
  ``{{ element.env[?name=='X'] || `[]` | length(@) }}``, with the operators ``GreaterThan`` and
  ``Equals``; anything else raises, so a policy change cannot pass on an unmodelled feature.

The kyverno CLI is not on PyPI/npm, so it is not used here.
"""

from __future__ import annotations

import copy
import re
from typing import Any

MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
              "volumeMounts": "mountPath", "ports": "containerPort"}  # fmt: skip
_COUNT_ENV = re.compile(
    r"^\{\{ element\.env\[\?name=='([A-Z0-9_]+)'\] \|\| `\[\]` \| length\(@\) \}\}$"
)


class Unsupported(ValueError):
    """The policy uses a Kyverno feature this evaluator does not model."""


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


def _key_value(key: str, element: dict[str, Any]) -> int:
    m = _COUNT_ENV.match(key)
    if m is None:
        raise Unsupported(f"precondition key {key!r}")
    return sum(1 for e in element.get("env") or [] if e.get("name") == m.group(1))


def _holds(conditions: dict[str, Any], element: dict[str, Any]) -> bool:
    if set(conditions) - {"all"}:
        raise Unsupported(f"preconditions {sorted(conditions)}")
    for c in conditions["all"]:
        got = _key_value(c["key"], element)
        if c["operator"] == "GreaterThan":
            ok = got > c["value"]
        elif c["operator"] == "Equals":
            ok = got == c["value"]
        else:
            raise Unsupported(f"operator {c['operator']}")
        if not ok:
            return False
    return True


def _substitute(patch: Any, element: dict[str, Any]) -> Any:
    if isinstance(patch, dict):
        return {k: _substitute(v, element) for k, v in patch.items()}
    if isinstance(patch, list):
        return [_substitute(v, element) for v in patch]
    if isinstance(patch, str) and "{{" in patch:
        if patch != "{{ element.name }}":
            raise Unsupported(f"variable {patch!r}")
        return element["name"]
    return patch


def _foreach(out: dict[str, Any], loops: list[dict[str, Any]]) -> dict[str, Any]:
    for loop in loops:
        if loop["list"] != "request.object.spec.containers" or set(loop) - {
            "list",
            "preconditions",
            "patchStrategicMerge",
        }:
            raise Unsupported(f"foreach {sorted(loop)} over {loop['list']}")
        for element in copy.deepcopy(out["spec"]["containers"]):
            if _holds(loop.get("preconditions", {"all": []}), element):
                out = merge(out, _substitute(loop["patchStrategicMerge"], element))
    return out


def apply_policy(policy: dict[str, Any], obj: dict[str, Any], operation: str) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    for rule in policy["spec"]["rules"]:
        if not matches(rule, out, operation):
            continue
        mutate = rule.get("mutate", {})
        if set(mutate) - {"patchStrategicMerge", "foreach"}:
            raise Unsupported(f"mutate {sorted(mutate)}")
        if "patchStrategicMerge" in mutate:
            out = merge(out, mutate["patchStrategicMerge"])
        if "foreach" in mutate:
            out = _foreach(out, mutate["foreach"])
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
