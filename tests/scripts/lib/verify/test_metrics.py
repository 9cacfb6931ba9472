"""The metrics store's row of ``verify``: the tier hit rates when there are samples, skipped with
the reason otherwise.

Double: a stand-in PromClient answering the queries (no network)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig
from infra.metrics.dashboards import Queries
from scripts.lib.report import PromClient
from scripts.lib.verify.metrics import check_metrics
from tests.doubles.fake_prometheus import FakePrometheus
from tests.support.config import make_cfg


def _prom(instant: dict[str, float]) -> Any:
    return FakePrometheus(instant, {})


def _queries(cfg: AppConfig) -> Any:
    return Queries(cfg, cfg.kvcache.endpoints[0], window="1h")


@pytest.mark.parametrize(
    ("l2", "rps", "status"), [(0.31, 2.0, "pass"), (0.0, 2.0, "fail"), (0.0, 0.0, "pass")]
)
def test_metrics_row_reads_the_tier_hit_rates(l2: float, rps: float, status: str) -> None:
    cfg = make_cfg(observability={"enabled": True})
    q = _queries(cfg)
    fake = _prom(
        {
            q.l0_hit_rate(): 0.5,
            q.l1_hit_rate(): 0.2,
            q.l2_hit_rate(): l2,
            q.request_rate(): rps,
            q.ttft(0.95): 0.25,
        }
    )
    with fake.serve() as url:
        check = check_metrics(
            cfg, cfg.kvcache.endpoints[0], lambda: PromClient(url, "us-west-2", None)
        )
    assert check.status == status, check
    assert f"L2 {l2:.0%}" in check.detail and "TTFT p95 250 ms" in check.detail
    if status == "fail":
        assert "near zero while requests flow" in check.detail and "PYTHONHASHSEED" in check.fix


def test_metrics_row_is_skipped_without_samples_or_store() -> None:
    cfg = make_cfg(observability={"enabled": True})
    ref = cfg.kvcache.endpoints[0]
    with _prom({}).serve() as url:
        empty = check_metrics(cfg, ref, lambda: PromClient(url, "us-west-2", None))
    assert empty.status == "skip" and "no L2 samples" in empty.detail
    gone = check_metrics(cfg, ref, lambda: PromClient("http://127.0.0.1:9", "us-west-2", None))
    assert gone.status == "skip" and "not reachable" in gone.detail
    off = make_cfg(observability={"enabled": False})
    assert check_metrics(off, ref, lambda: None).status == "skip"


def test_an_l1_only_endpoint_is_not_failed_for_reading_no_l2() -> None:
    cfg = make_cfg(observability={"enabled": True})
    q = _queries(cfg)
    fake = _prom(
        {
            q.l0_hit_rate(): 0.5,
            q.l1_hit_rate(): 0.2,
            q.l2_hit_rate(): 0.0,
            q.request_rate(): 2.0,
            q.ttft(0.95): 0.25,
        }
    )
    none = cfg.kvcache.endpoints[0].model_copy(update={"l2_backend": "none"})
    with fake.serve() as url:
        check = check_metrics(cfg, none, lambda: PromClient(url, "us-west-2", None))
    assert check.status == "pass", check


def _tiered_storage_cfg(**observability: Any) -> AppConfig:
    """dev's smallest config with its endpoint on HyperPod's Tiered Storage."""
    base = make_cfg(observability={"enabled": True, **observability})
    e = base.kvcache.endpoints[0]
    return make_cfg(
        observability={"enabled": True, **observability},
        kvcache={"endpoints": [{**e.model_dump(mode="json"), "l2_backend": "tieredstorage"}]},
    )


def _row(cfg: AppConfig, l2: float, rps: float = 2.0) -> Any:
    """The row with the store answering the endpoint's own queries (Tiered Storage's L2 from
    LMCache's read bytes, not the fs:// reads) at an L2 hit rate of ``l2``."""
    q = _queries(cfg)
    fake = _prom(
        {
            q.l0_hit_rate(): 0.5,
            q.l1_hit_rate(): 0.2,
            q.l2_hit_rate(): l2,
            q.request_rate(): rps,
            q.ttft(0.95): 0.25,
        }
    )
    with fake.serve() as url:
        return check_metrics(
            cfg, cfg.kvcache.endpoints[0], lambda: PromClient(url, "us-west-2", None)
        )


@pytest.mark.parametrize(("l2", "status"), [(0.004, "fail"), (0.0, "fail"), (0.31, "pass")])
def test_a_tiered_storage_endpoint_whose_l2_reads_nothing_fails_with_a_tiered_storage_fix(
    l2: float, status: str
) -> None:
    """A Tiered Storage endpoint has no L2 claim to mount: the fix of its near-zero row points
    at the managed tier (its row above, the operator's URL the Pods must keep), not at a
    mount."""
    cfg = _tiered_storage_cfg()
    assert "read_bytes" in (_queries(cfg).l2_hit_rate() or "")
    check = _row(cfg, l2)
    assert check.status == status, check
    if status == "fail":
        assert "mount" not in check.fix and "Tiered Storage" in check.fix
        assert "wait-tiered-storage" in check.fix and "sagemaker-hyperpod://" in check.fix


@pytest.mark.parametrize("backend", ["curvine", "tieredstorage"])
def test_the_row_fails_below_the_environments_l2_floor_and_passes_at_it(backend: str) -> None:
    """``observability.l2_hit_rate_floor`` says where this environment's L2 hit rate means a
    broken tier (the alert reads it too): 3 % under a 5 % floor fails, 5 % passes; a floor
    lowered to 0.1 % for a workload with few shared prefixes passes 0.5 %."""
    for floor, l2, status in ((0.05, 0.03, "fail"), (0.05, 0.05, "pass"), (0.001, 0.005, "pass")):
        cfg = (
            _tiered_storage_cfg(l2_hit_rate_floor=floor)
            if backend == "tieredstorage"
            else make_cfg(observability={"enabled": True, "l2_hit_rate_floor": floor})
        )
        assert _row(cfg, l2).status == status, (floor, l2)
