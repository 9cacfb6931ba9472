"""IAM roles for service accounts (IRSA) whose trust is generated from a ``ServiceAccount``."""

from __future__ import annotations

from aws_cdk import CfnJson
from aws_cdk import aws_iam as iam
from constructs import Construct

from infra.constructs.addons.service_accounts import ServiceAccount

STS_AUDIENCE = "sts.amazonaws.com"


def irsa_conditions(
    scope: Construct, id: str, oidc_provider: iam.IOpenIdConnectProvider, sa: ServiceAccount
) -> dict[str, object]:
    """``StringEquals``/``StringLike`` on ``<issuer>:sub`` and ``<issuer>:aud``.

    The issuer is a token (an import in another stack, or derived from an imported provider's
    ARN), and tokens cannot be JSON keys, so the condition body goes through ``CfnJson``.
    """
    issuer = oidc_provider.open_id_connect_provider_issuer
    sub = {f"{issuer}:sub": sa.subject}
    aud = {f"{issuer}:aud": STS_AUDIENCE}
    if sa.is_pattern:
        return {
            "StringLike": CfnJson(scope, f"{id}SubCondition", value=sub),
            "StringEquals": CfnJson(scope, f"{id}AudCondition", value=aud),
        }
    return {"StringEquals": CfnJson(scope, f"{id}Condition", value={**sub, **aud})}


def irsa_principal(
    scope: Construct, id: str, oidc_provider: iam.IOpenIdConnectProvider, sa: ServiceAccount
) -> iam.FederatedPrincipal:
    return iam.FederatedPrincipal(
        oidc_provider.open_id_connect_provider_arn,
        irsa_conditions(scope, id, oidc_provider, sa),
        "sts:AssumeRoleWithWebIdentity",
    )


def irsa_role(
    scope: Construct,
    id: str,
    *,
    oidc_provider: iam.IOpenIdConnectProvider,
    service_account: ServiceAccount,
    description: str,
    also_trusted_by: iam.IPrincipal | None = None,
    role_name: str | None = None,
) -> iam.Role:
    principal: iam.IPrincipal = irsa_principal(scope, f"{id}Trust", oidc_provider, service_account)
    if also_trusted_by is not None:
        principal = iam.CompositePrincipal(principal, also_trusted_by)
    return iam.Role(scope, id, assumed_by=principal, description=description, role_name=role_name)
