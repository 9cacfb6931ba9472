"""An environment with one endpoint per backend, synthesized: cfn-lint and cdk-nag clean (the
synth fails on an unacknowledged cdk-nag finding), what the kvcache stack holds and what the
endpoints wait for. Two extra synths: the tiers variant (curvine, tieredstorage, none; FSx has
its own variant in test_fsx_lustre.py) and one without a shared tier (tieredstorage, none).
Real CDK, no double."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.cdk.validation import templates_in
from infra.config import parse_config
from tests.support import background
from tests.support.config import TIERS_ENDPOINTS, env_raw, tiers_config
from tests.support.synth import TIERED, Synth, logical_id, needs_of, synth, synth_once

HELM = "Custom::AWSCDK-EKS-HelmChart"
MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"


@pytest.fixture(scope="session")
def tiers(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    result = synth_once("tiers", tiers_config(), tmp_path_factory)
    background.lint_soon(result.outdir, result.config.region)
    return result


@pytest.fixture(scope="session")
def unshared(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    """dev with an endpoint on tieredstorage and one without L2: no Curvine, FSx or Kyverno."""
    raw = env_raw()
    (base,) = raw["kvcache"]["endpoints"]
    raw["kvcache"]["endpoints"] = [
        {**base, "replicas": 1, "l2_backend": "tieredstorage"},
        {**base, "name": "qwen3-8b-l1", "replicas": 1, "l2_backend": "none"},
    ]
    config = parse_config(raw, "config/dev.yaml (unshared variant)", "dev")
    return synth(config, tmp_path_factory.mktemp("unshared"))


def _objects(result: Synth, suffix: str) -> list[dict[str, Any]]:
    """The objects the stack's manifests apply (a manifest is a JSON string without tokens)."""
    out: list[dict[str, Any]] = []
    for r in result.resources(suffix, MANIFEST).values():
        out += json.loads(r["Properties"]["Manifest"])
    return out


def _kinds_and_names(result: Synth, suffix: str) -> set[str]:
    return {f"{o['kind']}/{o['metadata']['name']}" for o in _objects(result, suffix)}


def _iecs(result: Synth) -> dict[str, dict[str, Any]]:
    objects = _objects(result, "endpoints")
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == "InferenceEndpointConfig"}


@pytest.mark.background
def test_the_tiers_environment_has_no_cfn_lint_error(tiers: Synth) -> None:
    for template in templates_in(tiers.outdir):
        assert background.lint_errors(template, tiers.config.region) == [], template.name


def test_each_endpoint_is_deployed_with_its_backends_spec(tiers: Synth) -> None:
    iecs = _iecs(tiers)
    assert set(iecs) == set(TIERS_ENDPOINTS)
    for name, (backend, replicas, _) in TIERS_ENDPOINTS.items():
        spec = iecs[name]["spec"]
        kv = spec["kvCacheSpec"]
        assert spec["replicas"] == replicas
        if backend == "none":
            assert kv == {"enableL1Cache": True, "enableL2Cache": False}, name
        else:
            # curvine: the placeholder the L2 policy rewrites; tieredstorage: as the operator
            # serves it.
            assert kv["enableL2Cache"] is True and kv["l2CacheSpec"] == {
                "l2CacheBackend": "tieredstorage"
            }, name


def test_the_kvcache_stack_holds_curvine_kyverno_and_no_file_system(tiers: Synth) -> None:
    assert "AWS::FSx::FileSystem" not in json.dumps(tiers.template_json("kvcache"))
    assert len(tiers.resources("kvcache", HELM)) == 1  # Kyverno
    objects = _kinds_and_names(tiers, "kvcache")
    assert {"ClusterPolicy/hyperpod-kvcache-l2-curvine", "StatefulSet/curvine-master"} <= objects


def test_endpoints_wait_for_tiered_storage_and_the_l2_objects(tiers: Synth) -> None:
    (endpoint,) = tiers.resources("endpoints", MANIFEST).values()
    (tiered,) = tiers.resources("tiered-storage", TIERED)
    kvcache = tiers.stacks.kvcache.manifests
    l2 = {logical_id(kvcache[n]) for n in ("40-l2-volume", "50-l2-policy")}
    assert {tiered, *l2} <= needs_of(endpoint)


def test_without_a_shared_tier_there_is_no_curvine_kyverno_or_l2_policy(unshared: Synth) -> None:
    assert unshared.resources("kvcache", HELM) == {}
    objects = _kinds_and_names(unshared, "kvcache")
    for absent in ("ClusterPolicy/", "curvine", "PersistentVolumeClaim/", "kyverno"):
        assert not [o for o in objects if absent in o], (absent, objects)
    assert "AWS::FSx::FileSystem" not in json.dumps(unshared.template_json("kvcache"))


def test_an_endpoint_on_tieredstorage_still_waits_for_tiered_storage(unshared: Synth) -> None:
    """Its L2 is the daemon Tiered Storage starts."""
    (endpoint,) = unshared.resources("endpoints", MANIFEST).values()
    (tiered,) = unshared.resources("tiered-storage", TIERED)
    assert tiered in needs_of(endpoint)
