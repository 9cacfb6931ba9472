"""What ``bench compare`` measures: endpoints named in config reached Pod by Pod (two Ready Pods
on different nodes), their tier from config, and explicit ``TIER=URL[,URL]`` targets.

Doubles: FakeKube (the recorded endpoint's Deployment and Pods, tests/scripts/lib/verify/
support.py) and a transport that maps each Pod to a URL instead of port-forwarding."""

from __future__ import annotations

import contextlib

import pytest

from scripts.lib.bench_compare.targets import endpoints_to_compare, open_endpoint, parse_target
from scripts.lib.errors import CliError, OperationError
from tests.doubles.fake_kube import FakeKube
from tests.support.config import make_cfg
from tests.support.endpoint_objects import PODS, recorded_cfg
from tests.support.verify import MapTransport, _clients, _seed_cluster

URLS = {"vllm-kvcache-7d9f-1": "http://a:1", "vllm-kvcache-7d9f-2": "http://b:2"}


def test_an_endpoint_is_its_two_pods_on_different_nodes_with_its_tier_from_config(
    kube: FakeKube,
) -> None:
    _seed_cluster(kube)
    cfg = recorded_cfg()
    (ref,) = endpoints_to_compare(cfg, ["vllm-kvcache"])
    transport = MapTransport(URLS)
    with contextlib.ExitStack() as stack:
        target = open_endpoint(stack, _clients(kube, {}), cfg, ref, transport)
    assert target.l2_backend == "curvine" and target.endpoint == "models/vllm-kvcache"
    assert sorted(target.urls) == ["http://a:1", "http://b:2"]
    assert target.metrics_urls == target.urls
    assert [port for _, port in transport.opened] == [ref.container_port] * 2


def test_metrics_are_read_where_vllm_listens(kube: FakeKube) -> None:
    """vLLM serves /metrics on its API port: one connection per Pod serves both."""
    _seed_cluster(kube)
    endpoint = {"name": "vllm-kvcache", "namespace": "models", "replicas": 1, "l2_backend": "none"}
    cfg = make_cfg(kvcache={"endpoints": [endpoint]})
    (ref,) = endpoints_to_compare(cfg, [])
    transport = MapTransport(URLS)
    with contextlib.ExitStack() as stack:
        target = open_endpoint(stack, _clients(kube, {}), cfg, ref, transport)
    assert sorted(p for _, p in transport.opened) == [8000, 8000]
    assert target.metrics_urls == target.urls


def test_one_ready_pod_is_one_replica_and_none_is_one_line(kube: FakeKube) -> None:
    _seed_cluster(kube)
    cfg = recorded_cfg()
    (ref,) = endpoints_to_compare(cfg, ["vllm-kvcache"])
    pod = kube.get(f"{PODS}/vllm-kvcache-7d9f-2")
    assert pod is not None
    pod["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    with contextlib.ExitStack() as stack:
        target = open_endpoint(stack, _clients(kube, {}), cfg, ref, MapTransport(URLS))
    assert target.urls == ("http://a:1",)
    pod1 = kube.get(f"{PODS}/vllm-kvcache-7d9f-1")
    assert pod1 is not None
    pod1["status"]["conditions"] = []
    with pytest.raises(OperationError, match="models/vllm-kvcache: no Ready Pod"):
        open_endpoint(contextlib.ExitStack(), _clients(kube, {}), cfg, ref, MapTransport(URLS))


def test_an_unknown_endpoint_is_refused_naming_the_configured_ones() -> None:
    with pytest.raises(CliError) as caught:
        endpoints_to_compare(recorded_cfg(), ["nope"])
    assert caught.value.code == 2
    assert caught.value.message.startswith(
        "--endpoint = nope: allowed: names in kvcache.endpoints (vllm-kvcache, other-model)"
    )


def test_explicit_targets_name_a_known_tier_and_one_or_two_urls() -> None:
    t = parse_target("tieredstorage=http://10.0.0.1:8000,http://10.0.0.2:8000/")
    assert (t.l2_backend, t.urls) == (
        "tieredstorage",
        ("http://10.0.0.1:8000", "http://10.0.0.2:8000"),
    )
    for bad in (
        "curvine",
        "curvine=",
        "curvine=10.0.0.1:8000",
        "l3=http://a:1",
        "none=http://a:1,http://b:1,http://c:1",
    ):
        with pytest.raises(CliError):
            parse_target(bad)


def test_two_endpoints_on_one_tier_are_not_compared_together() -> None:
    """The recorded config's two endpoints are both on curvine: the report compares tiers, so
    "all of them" is refused and one named endpoint is taken."""
    cfg = recorded_cfg()
    with pytest.raises(CliError, match="all on l2_backend curvine"):
        endpoints_to_compare(cfg, [])
    assert [e.name for e in endpoints_to_compare(cfg, ["other-model"])] == ["other-model"]
