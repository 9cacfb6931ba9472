"""cdk-nag (3.x) wiring: the checks run at synth; every acknowledgement names rule and reason."""

from __future__ import annotations

import json
from typing import Any

from aws_cdk import Acknowledgment, App, CfnElement, Stack, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct


def enable_checks(app: App) -> None:
    """AwsSolutions findings fail the synth unless acknowledged on the construct they concern.

    Call after every construct exists: CDK-generated internals are acknowledged here.
    """
    from infra.nag_cdk_internals import acknowledge_cdk_internals

    for child in app.node.children:
        if isinstance(child, Stack):
            acknowledge_cdk_internals(child)
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))


def finding_name(scope: IConstruct, value: Any) -> str:
    """How cdk-nag names ``value`` (a string with tokens, or an intrinsic) in finding ids."""
    return render_intrinsic(Stack.of(scope).resolve(value))


def ref(element: CfnElement, attribute: str | None = None) -> str:
    """How cdk-nag names a reference to ``element`` in finding ids: <LogicalId> or <Id.Attr>."""
    logical_id = Stack.of(element).resolve(element.logical_id)
    return f"<{logical_id}.{attribute}>" if attribute else f"<{logical_id}>"


def render_intrinsic(value: Any) -> str:
    """Render a resolved intrinsic the way cdk-nag does: Ref -> <Id>, GetAtt -> <Id.Attr>."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((fn, arg),) = value.items()
        if fn == "Ref":
            return f"<{arg}>"
        if fn == "Fn::GetAtt":
            return f"<{arg[0]}.{arg[1]}>"
        if fn == "Fn::Join" and arg[0] == "":
            return "".join(render_intrinsic(part) for part in arg[1])
    return json.dumps(value, separators=(",", ":"))


def acknowledge(construct: IConstruct, rule: str, reason: str, *findings: str) -> None:
    """Acknowledge ``rule`` on ``construct``; with ``findings`` only those (``Resource::*`` ...).

    cdk-nag 3 reports one finding per wildcard (``AwsSolutions-IAM5[Resource::*]``) and has no
    prefix matching, so each finding is listed explicitly.
    """
    ids = [f"{rule}[{f}]" for f in findings] if findings else [rule]
    acknowledge_findings(construct, dict.fromkeys(ids, reason))


def acknowledge_findings(construct: IConstruct, findings: dict[str, str]) -> None:
    """Acknowledge findings by their full id (``AwsSolutions-IAM5[Resource::*]``) -> reason."""
    Validations.of(construct).acknowledge(
        *(Acknowledgment(id=finding, reason=reason) for finding, reason in findings.items())
    )


def managed_policy_finding(name: str) -> str:
    """The IAM4 finding id of the AWS-managed policy ``name``."""
    return f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{name}]"


def wildcard_finding(resource: str) -> str:
    """The IAM5 finding id of a wildcard resource, as cdk-nag names it."""
    return f"AwsSolutions-IAM5[Resource::{resource}]"
