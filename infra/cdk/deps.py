"""Dependencies that say what really waits for what, also across stacks.

``consumer.node.add_dependency(provider)`` across stacks becomes a stack dependency: CloudFormation
cannot make a resource wait for a resource of another stack, so the template no longer says which
resource needed which. ``needs`` adds the dependency and records the provider's resources in the
consumer's resource metadata (``NEEDS_METADATA``, defined in the CDK-free
infra/environment/layout.py), where the deploy-time model (tools/deploy_time/model.py) reads them.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnResource, Stack
from constructs import IConstruct

from infra.environment.layout import NEEDS_METADATA


def _resources(scope: IConstruct) -> list[CfnResource]:
    return [c for c in scope.node.find_all() if isinstance(c, CfnResource)]


def needs(consumer: IConstruct, *providers: IConstruct) -> None:
    """``consumer`` (and every resource in it) is created after ``providers``."""
    for provider in providers:
        consumer.node.add_dependency(provider)
        if Stack.of(consumer) is Stack.of(provider):
            continue  # DependsOn in the template says it already
        record = [
            {"stack": Stack.of(r).artifact_id, "logicalId": Stack.of(r).resolve(r.logical_id)}
            for r in _resources(provider)
        ]
        for resource in _resources(consumer):
            current: Any = resource.get_metadata(NEEDS_METADATA) or []
            resource.add_metadata(NEEDS_METADATA, [*current, *record])
