"""The Kubernetes layer: Curvine (L2), Kyverno and the inference endpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infra.config.base import Section

if TYPE_CHECKING:
    from infra.config.model import AppConfig


class CurvineConfig(Section):
    enabled: bool = True
    """Deploy Curvine and point every endpoint's L2 at it."""


class KvCacheConfig(Section):
    curvine: CurvineConfig = CurvineConfig()


def check_kvcache(app: AppConfig) -> None:
    """Rules that span the Kubernetes layer and other sections; raise RuleViolation(field=...)."""
