"""Prometheus, as far as the collector's scrape configuration meets it: the configuration's shape
(``checked``) and target relabelling (``relabel``, ``scraped``).

Prometheus parses its configuration strictly (an unknown field is an error); ``checked`` holds
the configuration to the fields of the sections used here (names as in Prometheus's
configuration reference) and the values Prometheus accepts for the enumerated ones. Regexps are
Go's RE2, which has no lookaround, backreference, atomic group or conditional: those are refused
though Python's ``re`` reads them. tests/k8s/test_observability_k8s.py holds ``checked`` to
``promtool check config``.

Relabelling: what Prometheus does (model/relabel/relabel.go): the ``source_labels`` values joined by
``separator`` (default ``;``) are matched against ``regex`` (default ``(.*)``), anchored at both
ends; ``keep`` drops the target unless it matches; ``replace`` (the default action) sets
``target_label`` to ``replacement`` (default ``$1``) with the groups expanded, and removes the
label when the result is empty. Any other action is refused here rather than guessed.
"""

from __future__ import annotations

import re
from typing import Any

_GROUP = re.compile(r"\$(\d+)|\$\{(\w+)\}")
_DURATION = re.compile(r"^([0-9]+(ms|s|m|h|d|w|y))+$")
_LABEL_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")
# What Python's re reads and Go's RE2 refuses ("invalid or unsupported Perl syntax").
_NOT_RE2 = re.compile(r"\(\?(?:=|!|<=|<!|>|\(|P=)|\\[1-9]|\\Z")


def re2(pattern: str) -> re.Pattern[str]:
    """``pattern`` compiled, if RE2 reads it too; else fails."""
    assert not _NOT_RE2.search(pattern), f"regex {pattern!r}: syntax RE2 does not support"
    return re.compile(pattern)


GLOBAL = {"scrape_interval", "scrape_timeout", "evaluation_interval", "external_labels"}
SCRAPE_CONFIG = {
    "job_name",
    "scrape_interval",
    "scrape_timeout",
    "metrics_path",
    "scheme",
    "honor_labels",
    "honor_timestamps",
    "params",
    "kubernetes_sd_configs",
    "static_configs",
    "relabel_configs",
    "metric_relabel_configs",
    "sample_limit",
    "label_limit",
}
KUBERNETES_SD = {"role", "namespaces", "selectors", "api_server", "attach_metadata"}
ROLES = {"node", "service", "pod", "endpoints", "endpointslice", "ingress"}
NAMESPACES = {"names", "own_namespace"}
RELABEL = {
    "source_labels",
    "separator",
    "regex",
    "modulus",
    "target_label",
    "replacement",
    "action",
}
ACTIONS = {
    "replace",
    "keep",
    "drop",
    "keepequal",
    "dropequal",
    "hashmod",
    "labelmap",
    "labeldrop",
    "labelkeep",
    "lowercase",
    "uppercase",
}


def _fields(where: str, section: dict[str, Any], allowed: set[str]) -> None:
    unknown = set(section) - allowed
    assert not unknown, f"{where}: field(s) {sorted(unknown)} not found in Prometheus's config"


def checked(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` if Prometheus would load it (for the sections modelled here); else fails."""
    _fields("top level", config, {"global", "scrape_configs"})
    glob = config.get("global", {})
    _fields("global", glob, GLOBAL)
    for key in ("scrape_interval", "scrape_timeout", "evaluation_interval"):
        assert key not in glob or _DURATION.match(glob[key]), f"global.{key}: {glob[key]!r}"
    assert all(_LABEL_NAME.match(k) for k in glob.get("external_labels", {}))
    jobs = config["scrape_configs"]
    names = [job["job_name"] for job in jobs]
    assert len(set(names)) == len(names), f"duplicate job_name in {names}"
    for job in jobs:
        where = f"scrape_configs[{job['job_name']}]"
        _fields(where, job, SCRAPE_CONFIG)
        for sd in job.get("kubernetes_sd_configs", []):
            _fields(f"{where}.kubernetes_sd_configs", sd, KUBERNETES_SD)
            assert sd.get("role") in ROLES, f"{where}: role {sd.get('role')!r} not in {ROLES}"
            _fields(f"{where}.namespaces", sd.get("namespaces", {}), NAMESPACES)
        for rc in job.get("relabel_configs", []):
            _fields(f"{where}.relabel_configs", rc, RELABEL)
            assert rc.get("action", "replace") in ACTIONS, f"{where}: action {rc.get('action')!r}"
            if rc.get("action", "replace") == "replace":
                assert _LABEL_NAME.match(rc["target_label"]), f"{where}: {rc['target_label']!r}"
            re2(rc.get("regex", "(.*)"))
    return config


def _expand(match: re.Match[str], replacement: str) -> str:
    """``$1`` and ``${name}`` replaced by the match's groups (an unmatched group: empty)."""
    return _GROUP.sub(lambda g: match.group(int(g[1]) if g[1] else g[2]) or "", replacement)


def relabel(labels: dict[str, str], configs: list[dict[str, Any]]) -> dict[str, str] | None:
    """The target's labels after ``configs``, or None when a ``keep`` drops it."""
    out = dict(labels)
    for config in configs:
        action = config.get("action", "replace")
        value = config.get("separator", ";").join(
            out.get(s, "") for s in config.get("source_labels", [])
        )
        match = re.fullmatch(config.get("regex", "(.*)"), value)
        if action == "keep":
            if match is None:
                return None
        elif action == "replace":
            if match is None:
                continue
            result = _expand(match, config.get("replacement", "$1"))
            if result:
                out[config["target_label"]] = result
            else:
                out.pop(config["target_label"], None)
        else:
            raise ValueError(f"relabel action {action!r} is not modelled here")
    return out


def scraped(job: dict[str, Any], role: str, targets: list[dict[str, str]]) -> list[dict[str, str]]:
    """What ``job`` scrapes of the ``targets`` that ``role`` discovery found: those in its
    namespaces, with the address and path Prometheus requests (``__address__``,
    ``__metrics_path__``), relabelled, without the ``__meta_`` labels Prometheus drops after
    relabelling. As Prometheus does (scrape/target.go, PopulateLabels), a target without an
    ``instance`` label gets its final ``__address__`` as one."""
    (sd,) = job["kubernetes_sd_configs"]
    if sd["role"] != role:
        return []
    namespaces = set(sd["namespaces"]["names"])
    path = {"__metrics_path__": job.get("metrics_path", "/metrics")}
    kept = [
        relabel(path | t, job["relabel_configs"])
        for t in targets
        if t["__meta_kubernetes_namespace"] in namespaces
    ]
    out = [{k: v for k, v in t.items() if not k.startswith("__meta_")} for t in kept if t]
    for t in out:
        if "__address__" in t:
            t.setdefault("instance", t["__address__"])
    return out
