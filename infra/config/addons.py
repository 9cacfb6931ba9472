"""EKS add-ons installed after the HyperPod nodes exist."""

from __future__ import annotations

from typing import TYPE_CHECKING

from infra.config.base import Section

if TYPE_CHECKING:
    from infra.config.model import AppConfig


class AddonsConfig(Section):
    enabled: bool = True
    """Install the platform add-ons (cert-manager, CSI drivers, inference operator)."""


def check_addons(app: AppConfig) -> None:
    """Rules that span the add-ons and other sections; raise RuleViolation(field=...)."""
