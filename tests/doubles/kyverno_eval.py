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

from tests.doubles.label_selector import selects as label_selects

MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
}
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
        if (
            obj["kind"] in r.get("kinds", [])
            and operation in r.get("operations", ["CREATE", "UPDATE"])
            and ("namespaces" not in r or meta.get("namespace") in r["namespaces"])
            and all(
                labels.get(k) == v for k, v in r.get("selector", {}).get("matchLabels", {}).items()
            )
        ):
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


# ---- the webhooks Kyverno registers for the policies, and which the API server calls ----------
#
# Modelled on Kyverno 1.18.2 (kyverno/kyverno at tag kyverno-chart-3.8.2, commit 945ac9ce):
# pkg/controllers/webhook/controller.go ``buildForPoliciesMutation`` and
# ``buildResourceMutatingWebhookRules``, utils_webhook.go ``newWebhookPerPolicy``, utils.go
# ``collectResourceDescriptions``, ``capTimeout`` and ``webhookNameAndPath``;
# api/kyverno/v1/spec_types.go ``CustomWebhookMatchConditions`` and ``GetFailurePolicy``.
# - Every policy with a standard mutate rule and no ``webhookConfiguration.matchConditions`` is
#   merged into one shared webhook per failure policy (``mutate.kyverno.svc-fail`` /
#   ``-ignore``), whose matchConditions are the chart's global ``config.matchConditions``.
# - A policy with matchConditions gets a webhook of its own
#   (``mutate.kyverno.svc-<fail|ignore>-finegrained-<policy>``) carrying exactly them.
# - Every webhook takes its namespaceSelector and objectSelector from the chart's
#   ``config.webhooks`` (kyverno.config.webhooks appends the Kyverno namespace to the excluded
#   ones while ``config.excludeKyvernoNamespace``); rules are the matched kinds with the rules'
#   operations (CREATE and UPDATE when none); the timeout is the largest of the default (10 s)
#   and the policies' ``timeoutSeconds``, capped at 30 s. A webhook with no rule is not
#   registered.
# Which webhooks the API server calls (Kubernetes admission webhooks, "Matching requests"): the
# rules match resource and operation, the namespaceSelector matches the namespace's labels, the
# objectSelector the object's labels, and every matchCondition evaluates to true.

KIND_RESOURCES = {"Pod": ("", "v1", "pods")}
DEFAULT_TIMEOUT = 10
MUTATING_WEBHOOK = "mutate.kyverno.svc"


def _standard_mutate(rule: dict[str, Any]) -> bool:
    mutate = rule.get("mutate") or {}
    if set(rule) & {"validate", "generate", "verifyImages"} or "targets" in mutate:
        raise Unsupported(f"rule {rule['name']}: only standard mutate rules are modelled")
    return bool(mutate)


def _policy_rules(policy: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(group, version, resource, operation) the policy's mutate rules register."""
    annotations = policy["metadata"].get("annotations") or {}
    if annotations.get("pod-policies.kyverno.io/autogen-controllers") != "none":
        raise Unsupported("autogen rules (Pod controllers) are not modelled")
    out = set()
    for rule in policy["spec"]["rules"]:
        if not _standard_mutate(rule) or set(rule["match"]) - {"any"} or "exclude" in rule:
            raise Unsupported(f"rule {rule['name']}: only match.any is modelled")
        for block in rule["match"]["any"]:
            r = block["resources"]
            for kind in r["kinds"]:
                if kind not in KIND_RESOURCES:
                    raise Unsupported(f"kind {kind}")
                for op in r.get("operations") or ["CREATE", "UPDATE"]:
                    out.add((*KIND_RESOURCES[kind], op))
    return sorted(out)


def chart_webhook_selectors(values: dict[str, Any], namespace: str) -> dict[str, Any]:
    """namespaceSelector and objectSelector of every resource webhook, from the chart's merged
    values (the map form of ``config.webhooks``; the list form is not modelled)."""
    cfg = values["config"]
    webhooks = cfg.get("webhooks") or {}
    if isinstance(webhooks, list):
        raise Unsupported("config.webhooks as a list")
    selector = copy.deepcopy(webhooks.get("namespaceSelector") or {})
    if cfg.get("excludeKyvernoNamespace"):
        selector.setdefault("matchExpressions", []).append(
            {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": [namespace]}
        )
    return {
        "namespaceSelector": selector,
        "objectSelector": webhooks.get("objectSelector") or {},
        "matchConditions": cfg.get("matchConditions") or [],
    }


def registered_webhooks(
    policies: list[dict[str, Any]], selectors: dict[str, Any]
) -> list[dict[str, Any]]:
    """The webhooks of ``kyverno-resource-mutating-webhook-cfg`` for these ClusterPolicies."""
    shared: dict[str, dict[str, Any]] = {}
    own = []
    for p in policies:
        spec = p["spec"]
        if spec.get("admission") is False:
            continue
        wc = spec.get("webhookConfiguration") or {}
        failure = wc.get("failurePolicy") or spec.get("failurePolicy") or "Fail"
        timeout = wc.get("timeoutSeconds") or spec.get("webhookTimeoutSeconds") or 0
        rules = _policy_rules(p)
        if wc.get("matchConditions"):
            own.append(
                {
                    "name": f"{MUTATING_WEBHOOK}-{failure.lower()}-finegrained-"
                    f"{p['metadata']['name']}",
                    "failurePolicy": failure,
                    "rules": rules,
                    "matchConditions": wc["matchConditions"],
                    "timeoutSeconds": max(DEFAULT_TIMEOUT, timeout),
                }
            )
            continue
        hook = shared.setdefault(
            failure,
            {
                "name": f"{MUTATING_WEBHOOK}-{failure.lower()}",
                "failurePolicy": failure,
                "rules": [],
                "matchConditions": selectors["matchConditions"],
                "timeoutSeconds": DEFAULT_TIMEOUT,
            },
        )
        hook["rules"] = sorted(set(hook["rules"]) | set(rules))
        hook["timeoutSeconds"] = max(hook["timeoutSeconds"], timeout)
    hooks = [h for h in [*shared.values(), *own] if h["rules"]]
    for h in hooks:
        h["timeoutSeconds"] = min(30, h["timeoutSeconds"])
        h["namespaceSelector"] = selectors["namespaceSelector"]
        h["objectSelector"] = selectors["objectSelector"]
    return sorted(hooks, key=lambda h: str(h["name"]))


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes LabelSelector (matchLabels and matchExpressions)."""
    return label_selects(selector, labels, Unsupported)


def called_webhooks(
    webhooks: list[dict[str, Any]], pod: dict[str, Any], operation: str
) -> list[dict[str, Any]]:
    """The webhooks the API server calls for ``operation`` on ``pod`` (its namespace carries only
    the label Kubernetes sets on every namespace, ``kubernetes.io/metadata.name``)."""
    ns = pod["metadata"]["namespace"]
    ns_labels = {"kubernetes.io/metadata.name": ns}
    request = {"namespace": ns, "operation": operation}
    out = []
    for h in webhooks:
        if ("", "v1", "pods", operation) not in h["rules"]:
            continue
        if not selects(h["namespaceSelector"], ns_labels):
            continue
        if not selects(h["objectSelector"], pod["metadata"].get("labels") or {}):
            continue
        if _conditions_hold(h["matchConditions"], request, pod):
            out.append(h)
    return out


def _conditions_hold(
    conditions: list[dict[str, str]], request: dict[str, Any], pod: dict[str, Any]
) -> bool:
    """All true: called. Any false: skipped. Otherwise an error, which (failurePolicy Fail)
    refuses the request: counted as called, since the Pod then depends on the webhook too."""
    for c in conditions:
        try:
            if not cel(c["expression"], request, pod):
                return False
        except CelError:
            continue
    return True


# ---- CEL: the forms the policy's matchConditions use, and nothing else --------------------------
#
# A conjunction (``&&``) of: ``request.namespace in [<strings>]``,
# ``has(object.metadata.labels)``, ``'<key>' in object.metadata.labels``,
# ``object.metadata.labels['<key>'] in [<strings>]`` and
# ``request.namespace + '/' + object.metadata.labels['<key>'] in [<strings>]`` (CEL's ``+``
# binds tighter than ``in``: the joined string is looked up). Anything else raises Unsupported,
# so a changed expression cannot pass on a form this double does not evaluate.

_STR = r"'([^'\\]*)'"
_LIST = r"\[((?:\s*'[^'\\]*'\s*,?)*)\]"
_TERMS = [
    (re.compile(rf"^request\.namespace in {_LIST}$"), "namespace_in"),
    (re.compile(r"^has\(object\.metadata\.labels\)$"), "has_labels"),
    (re.compile(rf"^{_STR} in object\.metadata\.labels$"), "label_present"),
    (re.compile(rf"^object\.metadata\.labels\[{_STR}\] in {_LIST}$"), "label_in"),
    (
        re.compile(
            rf"^request\.namespace \+ '/' \+ object\.metadata\.labels\[{_STR}\] in {_LIST}$"
        ),
        "namespace_label_in",
    ),
]


def _strings(body: str) -> list[str]:
    return re.findall(_STR, body)


class CelError(ValueError):
    """The expression fails at runtime (a missing map key): the API server then applies the
    webhook's failurePolicy, so for a Fail webhook the request is refused."""


def _term(term: str, request: dict[str, Any], labels: dict[str, str] | None) -> bool:
    found = next(((m, form) for p, form in _TERMS if (m := p.match(term))), None)
    if found is None:
        raise Unsupported(f"CEL term {term!r}")
    m, form = found
    if form == "namespace_in":
        return bool(request["namespace"] in _strings(m.group(1)))
    if form == "has_labels":
        return labels is not None
    if labels is None:
        raise CelError("no such key: labels")
    if form == "label_present":
        return m.group(1) in labels
    if m.group(1) not in labels:
        raise CelError(f"no such key: {m.group(1)}")
    value = labels[m.group(1)]
    if form == "namespace_label_in":
        value = f"{request['namespace']}/{value}"
    return value in _strings(m.group(2))


def cel(expression: str, request: dict[str, Any], obj: dict[str, Any]) -> bool:
    """CEL's ``&&`` is false when any side is false, even if another side errs; an error
    otherwise."""
    labels = obj["metadata"].get("labels")
    error: CelError | None = None
    for term in (t.strip() for t in expression.split("&&")):
        try:
            if not _term(term, request, labels):
                return False
        except CelError as exc:
            error = exc
    if error is not None:
        raise error
    return True
