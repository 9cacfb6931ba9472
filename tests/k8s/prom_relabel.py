"""Prometheus's target relabelling, for the two actions the collector's scrape configuration uses.

What Prometheus does (model/relabel/relabel.go): the ``source_labels`` values joined by
``separator`` (default ``;``) are matched against ``regex`` (default ``(.*)``), anchored at both
ends; ``keep`` drops the target unless it matches; ``replace`` (the default action) sets
``target_label`` to ``replacement`` (default ``$1``) with the groups expanded, and removes the
label when the result is empty. Any other action is refused here rather than guessed.
"""

from __future__ import annotations

import re
from typing import Any

_GROUP = re.compile(r"\$(\d+)|\$\{(\w+)\}")


def _expand(match: re.Match[str], replacement: str) -> str:
    """``$1`` and ``${name}`` replaced by the match's groups (an unmatched group: empty)."""
    return _GROUP.sub(lambda g: match.group(int(g[1]) if g[1] else g[2]) or "", replacement)


def relabel(labels: dict[str, str], configs: list[dict[str, Any]]) -> dict[str, str] | None:
    """The target's labels after ``configs``, or None when a ``keep`` drops it."""
    out = dict(labels)
    for config in configs:
        action = config.get("action", "replace")
        value = config.get("separator", ";").join(out.get(s, "") for s in
                                                  config.get("source_labels", []))  # fmt: skip
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


def scraped(job: dict[str, Any], targets: list[dict[str, str]]) -> list[dict[str, str]]:
    """What ``job`` scrapes of the discovered ``targets``: those in its namespaces, relabelled,
    without the ``__meta_`` labels Prometheus drops after relabelling."""
    (sd,) = job["kubernetes_sd_configs"]
    namespaces = set(sd["namespaces"]["names"])
    kept = [relabel(t, job["relabel_configs"]) for t in targets
            if t["__meta_kubernetes_namespace"] in namespaces]  # fmt: skip
    return [{k: v for k, v in t.items() if not k.startswith("__meta_")} for t in kept if t]
