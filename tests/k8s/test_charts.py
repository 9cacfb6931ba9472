"""Which charts an environment gets (``k8s.app.build_charts``), by its L2 store."""

from __future__ import annotations

from infra.config import parse_config
from k8s.app import build_charts
from tests.config.unit_config import SOURCE, with_overrides


def chart_names(overrides: dict[str, object]) -> list[str]:
    config = parse_config(with_overrides(overrides), SOURCE, "unit")
    return [name for name, _ in build_charts(config).ordered]


def test_curvine_as_l2_gets_every_chart_in_apply_order() -> None:
    assert chart_names({}) == [
        "00-namespaces", "10-storage", "20-curvine", "25-curvine-network-policy",
        "30-curvine-csi", "40-l2-volume", "50-l2-policy", "60-endpoints",
    ]  # fmt: skip


def test_without_a_shared_l2_there_is_no_l2_claim_and_no_l2_policy() -> None:
    """Endpoints that keep their KV cache in GPU and CPU memory only: nothing to mount."""
    no_l2 = {"kvcache.curvine.enabled": False, "kvcache.endpoints.0.enable_l2_cache": False}
    assert chart_names(no_l2) == ["00-namespaces", "10-storage", "60-endpoints"]
