"""Each endpoint's L2 backend (``kvcache.l2_backend`` and ``kvcache.endpoints[].l2_backend``):
how null resolves, what the backends deploy, and the whole line each backend rule refuses a
config with, word for word (pure parsing, no double)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import parse_config
from infra.config.kvcache import L2_BACKENDS
from tests.support.config import BASE, SOURCE, refusal, with_overrides

ENDPOINT = BASE["kvcache"]["endpoints"][0]  # inference/qwen3-8b of config/dev.yaml


def _endpoints(*backends: str | None, **kvcache: Any) -> dict[str, Any]:
    """dev's endpoint once per backend (named ``e<i>``, one replica each; None: the key left
    out), on three GPU nodes so that every combination fits."""
    endpoints = []
    for i, backend in enumerate(backends):
        e = {**ENDPOINT, "name": f"e{i}", "replicas": 1}
        if backend is not None:
            e["l2_backend"] = backend
        endpoints.append(e)
    return {
        "hyperpod.gpu_group.instance_count": 3,
        "kvcache.endpoints": endpoints,
        **{f"kvcache.{k}": v for k, v in kvcache.items()},
    }


def _parse(overrides: dict[str, Any]) -> Any:
    return parse_config(with_overrides(overrides), SOURCE, "dev")


# --- how null resolves ---------------------------------------------------------------------------


@pytest.mark.parametrize("default", L2_BACKENDS)
def test_an_endpoint_without_its_own_backend_takes_the_sections_and_one_with_it_keeps_it(
    default: str,
) -> None:
    # none beside the default, so no combination mixes Curvine and FSx.
    kv = _parse(_endpoints(None, "none", l2_backend=default)).kvcache
    assert [e.l2_backend for e in kv.endpoints] == [default, "none"]
    assert [e.l2_backend for e in kv.endpoints] == [default, "none"]


def test_an_explicit_null_also_takes_the_sections_backend() -> None:
    overrides = _endpoints("tieredstorage", l2_backend="none")
    overrides["kvcache.endpoints"][0]["l2_backend"] = None
    assert _parse(overrides).kvcache.endpoints[0].l2_backend == "none"


def test_the_default_is_curvine_for_every_endpoint() -> None:
    kv = _parse({}).kvcache
    assert [e.l2_backend for e in kv.endpoints] == ["curvine"] and "curvine" in kv.l2_backends


# --- what each mix deploys -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backends", "curvine", "store", "mounted"),
    [
        (("curvine", "tieredstorage", "none"), True, "curvine", ["e0"]),
        (("fsx_lustre", "tieredstorage", "none"), False, "fsx_lustre", ["e0"]),
        (("tieredstorage", "none"), False, None, []),
        (("none",), False, None, []),
        (("curvine", "curvine"), True, "curvine", ["e0", "e1"]),
    ],
)
def test_curvine_and_the_policy_follow_the_endpoints_that_use_them(
    backends: tuple[str, ...], curvine: bool, store: str | None, mounted: list[str]
) -> None:
    kv = _parse(_endpoints(*backends)).kvcache
    assert ("curvine" in kv.l2_backends) is curvine
    assert kv.mounted_l2_backend == store
    assert [e.name for e in kv.mounted_l2_endpoints] == mounted
    assert [e.l2_backend != "none" for e in kv.endpoints] == [b != "none" for b in backends]


# --- the rules, word for word --------------------------------------------------------------------


def test_curvine_and_fsx_in_one_environment_are_refused() -> None:
    field = "kvcache.endpoints.1.l2_backend"
    assert refusal(_endpoints("curvine", "fsx_lustre")) == (
        f"{SOURCE}: {field} = 'fsx_lustre': allowed: curvine, tieredstorage or none while "
        "endpoint inference/e0 uses curvine: Curvine and FSx for Lustre do not share an "
        f"environment; fix: use another environment for FSx, or set {field} to curvine"
    )


def test_an_inherited_backend_is_named_where_it_was_written() -> None:
    """The endpoint wrote nothing: the key to change is the section's."""
    field = "kvcache.l2_backend"
    assert refusal(_endpoints("curvine", None, l2_backend="fsx_lustre")) == (
        f"{SOURCE}: {field} = 'fsx_lustre': allowed: curvine, tieredstorage or none while "
        "endpoint inference/e0 uses curvine: Curvine and FSx for Lustre do not share an "
        f"environment; fix: use another environment for FSx, or set {field} to curvine"
    )


@pytest.mark.parametrize(
    ("backend", "why"),
    [
        (
            "tieredstorage",
            "the tieredstorage L2 is the memory Tiered Storage reserves for the ai-toolkit daemon",
        ),
        (
            "curvine",
            "the operator renders an L2 endpoint's Pod with a mount of the ai-toolkit daemon's "
            "shared memory, which only Tiered Storage creates",
        ),
        (
            "fsx_lustre",
            "the operator renders an L2 endpoint's Pod with a mount of the ai-toolkit daemon's "
            "shared memory, which only Tiered Storage creates",
        ),
    ],
)
def test_an_endpoint_with_l2_needs_tiered_storage_on(backend: str, why: str) -> None:
    field = "kvcache.endpoints.0.l2_backend"
    disabled = {**_endpoints(backend), "tiered_storage.mode": "Disable"}
    assert refusal(disabled) == (
        f"{SOURCE}: {field} = {backend!r}: allowed: none while tiered_storage.mode is Disable "
        f"({why}); fix: set tiered_storage.mode to Enable, or {field} to none"
    )


def test_endpoints_without_l2_need_no_tiered_storage() -> None:
    assert refusal({**_endpoints("none", "none"), "tiered_storage.mode": "Disable"}) is None


@pytest.mark.parametrize("value", [True, False])
def test_the_removed_curvine_switch_says_that_the_endpoints_decide(value: bool) -> None:
    """Curvine runs exactly when an endpoint's l2_backend is curvine: no key must agree."""
    field = "kvcache.curvine.enabled"
    assert refusal({**_endpoints("curvine", "none"), field: value}) == (
        f"{SOURCE}: {field} = {value}: allowed: nothing: Curvine is deployed exactly when some "
        "endpoint's l2_backend is curvine; fix: remove kvcache.curvine.enabled; to run without "
        "Curvine set the endpoints' l2_backend (or kvcache.l2_backend) to fsx_lustre, "
        "tieredstorage or none"
    )


@pytest.mark.parametrize("value", [True, False])
def test_the_replaced_enable_l2_cache_key_says_what_replaces_it(value: bool) -> None:
    field = "kvcache.endpoints.0.enable_l2_cache"
    assert refusal({field: value}) == (
        f"{SOURCE}: {field} = {value}: allowed: l2_backend (curvine, fsx_lustre, tieredstorage "
        "or none): enable_l2_cache was replaced by it; fix: write l2_backend: none where "
        "enable_l2_cache was false, and remove enable_l2_cache (the endpoint then takes "
        "kvcache.l2_backend)"
    )


def test_an_unknown_backend_is_refused_listing_the_four() -> None:
    line = refusal({"kvcache.endpoints.0.l2_backend": "redis"})
    assert line is not None and "kvcache.endpoints.0.l2_backend = 'redis'" in line
    assert all(repr(b) in line for b in L2_BACKENDS)
