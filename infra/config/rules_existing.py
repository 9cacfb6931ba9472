"""Rules of an existing cluster across sections: each ARN of ``existing_cluster`` names the
environment's own partition, account and region (the stacks deploy there; an ARN of another
account or region passes synth, then IAM policies, the kubectl handler and the add-ons' roles
point at a cluster they cannot reach, and the deploy fails)."""

from __future__ import annotations

import re

from infra.config.errors import RuleViolation
from infra.config.hyperpod import ExistingClusterConfig
from infra.config.model import AppConfig
from infra.facts.aws_models import regions

# The EKS OIDC issuer in an OIDC provider's ARN carries the cluster's region.
_OIDC_ISSUER = re.compile(r"^oidc-provider/oidc\.eks\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?/")


def check_existing_arns(app: AppConfig, existing: ExistingClusterConfig) -> None:
    cluster = existing.hyperpod_cluster_name
    where = f"--region {app.region}"
    commands = {
        "hyperpod_cluster_arn": f"aws sagemaker describe-cluster --cluster-name {cluster} "
        f"{where} --query ClusterArn",
        "oidc_provider_arn": "aws iam list-open-id-connect-providers (the one whose URL is "
        f"aws eks describe-cluster --name {existing.eks_cluster_name} {where} --query "
        "cluster.identity.oidc.issuer)",
        "kubectl_role_arn": "aws iam get-role --role-name <name> --query Role.Arn",
    }
    partition = regions().get(app.region, "aws")
    for name, command in commands.items():
        arn = getattr(existing, name)
        if arn is None or _in_place(name, arn, partition, app.region, app.account):
            continue
        raise RuleViolation(
            f"an ARN of the environment's account {app.account} (partition {partition}) and, "
            f"for the cluster and the OIDC issuer, its region {app.region}: the stacks deploy "
            "there",
            f"copy the ARN from `{command}`, or set account and region to the cluster's",
            field=f"existing_cluster.{name}",
            value=arn,
        )


def _in_place(name: str, arn: str, partition: str, region: str, account: str) -> bool:
    """An IAM ARN has no region; an OIDC provider's issuer URL names one."""
    parts = arn.split(":", 5)
    parts += [""] * (6 - len(parts))
    if (parts[1], parts[4]) != (partition, account):
        return False
    if name == "hyperpod_cluster_arn":
        return parts[3] == region
    issuer = _OIDC_ISSUER.match(parts[5])
    return name != "oidc_provider_arn" or issuer is None or issuer.group(1) == region
