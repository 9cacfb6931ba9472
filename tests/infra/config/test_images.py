"""The endpoint image must carry what its backend needs (infra/config/images.py): the whole line
a known image that lacks it is refused with, and the default image and arguments (pure parsing,
no double)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.config import images
from infra.config.kvcache import EndpointConfig
from tests.support.config import SOURCE, refusal

OLD = "lmcache/vllm-openai:v0.3.9"
FIELD = "kvcache.endpoints.0.image"


def test_the_default_image_recomputes_a_failed_l2_read() -> None:
    """v0.4.7 (vLLM 0.23.0) with the policy spelled out in --kv-transfer-config."""
    e = EndpointConfig()
    assert e.image == "lmcache/vllm-openai:v0.4.7"
    transfer = json.loads(e.args[e.args.index("--kv-transfer-config") + 1])
    assert transfer == {
        "kv_connector": "LMCacheConnectorV1",
        "kv_role": "kv_both",
        "kv_load_failure_policy": "recompute",
    }


@pytest.mark.parametrize("backend", ["curvine", "tieredstorage"])
def test_an_image_that_runs_a_failed_l2_read_on_unfilled_blocks_is_refused(backend: str) -> None:
    found = refusal({FIELD: OLD, "kvcache.endpoints.0.l2_backend": backend})
    why = (
        "has no sagemaker-hyperpod:// connector (LMCache 0.3.9.post1+)"
        if backend == "tieredstorage"
        else "does not recompute a failed L2 read: the request runs on unfilled KV blocks "
        "(vLLM 0.11.1+ with LMCache 0.3.9.post1+)"
    )
    assert found == (
        f"{SOURCE}: {FIELD} = '{OLD}': allowed: an image that serves l2_backend {backend}, like "
        f"lmcache/vllm-openai:v0.4.7: {OLD} (LMCache 0.3.9, vLLM 0.11.0) {why}; fix: set "
        f"{FIELD} to lmcache/vllm-openai:v0.4.7"
    )


def test_a_failure_policy_on_a_vllm_without_it_is_refused_and_l1_only_may_drop_it() -> None:
    """vLLM before 0.13.0 rejects the key; an L1-only endpoint reads no L2 and may run v0.3.9."""
    none = {FIELD: OLD, "kvcache.endpoints.0.l2_backend": "none"}
    assert refusal(none) == (
        f"{SOURCE}: {FIELD} = '{OLD}': allowed: an image that serves l2_backend none, like "
        f"lmcache/vllm-openai:v0.4.7: {OLD} (LMCache 0.3.9, vLLM 0.11.0) has no "
        "kv_load_failure_policy (vLLM 0.13.0+); fix: set kvcache.endpoints.0.image to "
        "lmcache/vllm-openai:v0.4.7, or drop kv_load_failure_policy from "
        "kvcache.endpoints.0.args"
    )
    args = ["--kv-transfer-config", '{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}']
    assert refusal({**none, "kvcache.endpoints.0.args": args}) is None


@pytest.mark.parametrize(
    "image",
    [
        "lmcache/vllm-openai:v0.3.12",
        "lmcache/vllm-openai:v0.3.15",
        "docker.io/lmcache/vllm-openai:v0.4.7@sha256:" + "a" * 64,
        "123456789012.dkr.ecr.us-west-2.amazonaws.com/vllm:v0.3.9",  # unknown: not checked
    ],
)
def test_a_known_good_or_unknown_image_is_accepted_on_every_backend(image: str) -> None:
    for backend in ("curvine", "tieredstorage", "none"):
        assert refusal({FIELD: image, "kvcache.endpoints.0.l2_backend": backend}) is None


@pytest.mark.parametrize("backend", ["curvine", "tieredstorage", "none"])
def test_an_image_that_fails_at_pod_start_is_refused_on_every_backend(backend: str) -> None:
    """v0.5.5-cu129 pairs a CUDA 13 vLLM with a CUDA 12.9 torch: no endpoint can run it."""
    broken = "lmcache/vllm-openai:v0.5.5-cu129@sha256:" + "b" * 64
    found = refusal({FIELD: broken, "kvcache.endpoints.0.l2_backend": backend})
    assert found == (
        f"{SOURCE}: {FIELD} = '{broken}': allowed: an image that serves l2_backend {backend}, "
        f"like lmcache/vllm-openai:v0.4.7: {broken} installs a CUDA 13 vLLM beside a CUDA 12.9 "
        f"torch: vLLM fails to load at Pod start; fix: set {FIELD} to lmcache/vllm-openai:v0.4.7"
    )


RUNTIME_REQUIREMENTS = Path(__file__).resolve().parents[3] / "tests" / "runtime" / "requirements"


def test_the_runtime_layer_installs_the_engines_each_image_carries() -> None:
    """make test-runtime builds one virtualenv per file, named after an image tag: it must pin
    the LMCache and vLLM that tag carries, or it judges the product against other engines."""
    files = sorted(RUNTIME_REQUIREMENTS.glob("*.txt"))
    assert {p.stem for p in files} == set(images.SUPPORTED)
    for path in files:
        known = images.KNOWN[path.stem]
        pins = dict(
            line.split("==", 1)
            for line in path.read_text().splitlines()
            if "==" in line and not line.startswith("#")
        )
        assert (pins["lmcache"], pins["vllm"]) == (known.lmcache, known.vllm), path.name


MIRRORS = [
    "123456789012.dkr.ecr.us-west-2.amazonaws.com/lmcache/vllm-openai",
    "123456789012.dkr.ecr.us-west-2.amazonaws.com/docker-hub/lmcache/vllm-openai",
    "registry.example.com:5000/mirror/lmcache/vllm-openai",
    "docker.io/lmcache/vllm-openai",
]


@pytest.mark.parametrize("repository", MIRRORS)
def test_a_refused_version_is_recognised_whatever_registry_serves_it(repository: str) -> None:
    """A mirror that keeps the repository path (an ECR copy, a pull-through cache's prefix)
    serves the same build: its refused tags are refused there too."""
    image = f"{repository}:v0.5.5-cu129"
    found = refusal({FIELD: image})
    assert found is not None and "installs a CUDA 13 vLLM beside a CUDA 12.9 torch" in found
    old = refusal(
        {FIELD: f"{repository}:v0.3.9", "kvcache.endpoints.0.l2_backend": "tieredstorage"}
    )
    assert old is not None and "no sagemaker-hyperpod:// connector" in old
    assert refusal({FIELD: f"{repository}:v0.4.7"}) is None
    if not repository.startswith("docker.io/"):
        assert found.endswith("(or your registry's copy of tag v0.4.7)")


@pytest.mark.parametrize(
    "image",
    ["team/lmcache-vllm-openai:v0.5.5-cu129", "ghcr.io/other/vllm-openai:v0.5.5-cu129"],
)
def test_another_repository_with_the_same_tag_is_not_lmcaches(image: str) -> None:
    assert refusal({FIELD: image}) is None
