"""Curvine's own FUSE dashboard, shipped unchanged next to ours: it is the file the pinned
Curvine tag ships, it finds the FUSE targets our collector scrapes, and every series it queries
is one the pinned curvine-fuse serves (``infra/metrics/catalog.py``)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any

from infra.config import parse_config
from infra.metrics.catalog import METRICS, metric_names
from infra.metrics.dashboards import CURVINE_FUSE_DASHBOARD, upstream_dashboards
from k8s.observability import scrape_config
from tests.support.config import SOURCE, with_overrides


def _dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(CURVINE_FUSE_DASHBOARD.read_text())
    return data


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for p in panels:
        yield p
        yield from _panels(p.get("panels", []))


def _variable(name: str) -> dict[str, Any]:
    (found,) = [v for v in _dashboard()["templating"]["list"] if v["name"] == name]
    return found


def test_the_kept_file_is_the_one_its_sources_name() -> None:
    """SOURCES.md names the tag and the SHA-256; the file must still be that one."""
    sources = (CURVINE_FUSE_DASHBOARD.parent / "SOURCES.md").read_text()
    (row,) = [
        line
        for line in sources.splitlines()
        if line.startswith(f"| {CURVINE_FUSE_DASHBOARD.name} ")
    ]
    digest = hashlib.sha256(CURVINE_FUSE_DASHBOARD.read_bytes()).hexdigest()
    assert row.rstrip(" |").endswith(digest)
    config = parse_config(with_overrides({}), SOURCE, "dev")
    assert f"tag `{config.kvcache.curvine.version}`" in row


def test_every_series_the_fuse_dashboard_queries_is_one_curvine_fuse_serves() -> None:
    exprs = [t["expr"] for p in _panels(_dashboard()["panels"]) for t in p.get("targets", [])]
    assert len(exprs) > 50
    used = set().union(*(metric_names(e) for e in exprs if e))
    assert used - set(METRICS) == set()
    assert "curvine_fuse_requests_total" in used


def test_its_job_variable_keeps_the_collectors_fuse_job_and_no_other() -> None:
    """The variable lists ``label_values(up, job)`` filtered by its regex: the job our collector
    gives the FUSE Service must pass, the other Curvine and vLLM jobs must not."""
    config = parse_config(with_overrides({}), SOURCE, "dev")
    jobs = [j["job_name"] for j in scrape_config(config)["scrape_configs"]]
    regex = _variable("job")["regex"].strip("/")
    kept = [j for j in jobs if re.fullmatch(regex, j)]
    assert kept == ["curvine-fuse"], jobs


def test_it_ships_only_with_curvine() -> None:
    on = parse_config(with_overrides({}), SOURCE, "dev")
    assert upstream_dashboards(on) == {
        "curvine-fuse-dashboard.json": CURVINE_FUSE_DASHBOARD.read_text()
    }
    off = parse_config(with_overrides({"kvcache.l2_backend": "none"}), SOURCE, "dev")
    assert upstream_dashboards(off) == {}
