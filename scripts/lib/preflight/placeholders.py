"""``preflight``'s refusal of a config that still holds a placeholder where the deploy needs a
real value. The synth only warns (the shipped configs hold the placeholders and must
synthesize); before a deploy, preflight fails the row. No AWS call: it runs without
credentials too."""

from __future__ import annotations

from infra.config import AppConfig
from infra.config.kvcache import PLACEHOLDER_MODEL_BUCKET
from infra.config.model import placeholder_buckets
from scripts.lib.checks import Check

STAGE = "model buckets"


def check_placeholders(cfg: AppConfig) -> list[Check]:
    found = placeholder_buckets(cfg)
    if not found:
        return [Check(STAGE, "pass", "every endpoint on s3 names its own bucket")]
    return [
        Check(
            f"{STAGE}: {name}",
            "fail",
            f"{field} is the placeholder {PLACEHOLDER_MODEL_BUCKET}: the endpoint's Pods "
            "would never load weights",
            f"write the bucket that holds the weights in {field} of config/"
            f"{cfg.environment}.yaml (docs/kubernetes-layer.md: staging them)",
        )
        for field, name in found
    ]
