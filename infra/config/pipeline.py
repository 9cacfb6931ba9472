"""The CDK Pipelines stack (deployed once per account)."""

from __future__ import annotations

from infra.config.base import Section


class PipelineConfig(Section):
    enabled: bool = False
    """Synthesize the pipeline stack with this environment."""
