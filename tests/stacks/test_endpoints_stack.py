"""The endpoints stack names, as a synth warning, an endpoint whose weights are still to come
from the placeholder bucket (dev.yaml's): the shipped configs synthesize, and ``hpkv
preflight`` refuses them before a deploy."""

from __future__ import annotations

from infra.config.kvcache import PLACEHOLDER_MODEL_BUCKET
from tests.support.synth import Synth


def _warnings(synth: Synth) -> list[str]:
    stack = synth.stacks.endpoints
    return [str(entry.data) for entry in stack.node.metadata if entry.type == "aws:cdk:warning"]


def test_dev_synthesizes_and_names_its_placeholder_bucket_in_a_warning(dev: Synth) -> None:
    (warning,) = [w for w in _warnings(dev) if PLACEHOLDER_MODEL_BUCKET in w]
    assert warning.startswith(
        "kvcache.endpoints.0.model.s3_bucket of endpoint qwen3-8b is the placeholder "
    )
    assert "hpkv preflight refuses it" in warning
