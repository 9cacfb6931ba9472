"""Preflight rows for a cluster this app creates: credentials, HyperPod quotas, the instance
types in the AZ id and the kubectl layer's minor against a live cluster."""

from __future__ import annotations

from collections import Counter

from botocore.exceptions import BotoCoreError, ClientError

from infra.config import AppConfig
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.environment import cluster_names
from scripts.lib.errors import describe_failure


def check_identity(clients: Clients, cfg: AppConfig) -> Check:
    return _identity(clients, cfg)[0]


def _identity(clients: Clients, cfg: AppConfig) -> tuple[Check, bool]:
    """(the credentials row, whether AWS answered at all)."""
    try:
        ident = clients.aws("sts").get_caller_identity()
    except (ClientError, BotoCoreError) as exc:
        failure = describe_failure(exc)
        return Check(
            "credentials",
            "fail",
            failure.message if failure else str(exc),
            "export AWS_PROFILE=<profile> or run `aws configure` / `aws sso login`",
        ), False
    account = ident["Account"]
    if account != cfg.account:
        return Check(
            "credentials",
            "fail",
            f"account {account}, config wants {cfg.account}",
            f"use credentials for account {cfg.account} (AWS_PROFILE)",
        ), True
    return Check(
        "credentials", "pass", f"{ident['Arn']} in {account}, region {clients.region}"
    ), True


def _quota_values(clients: Clients) -> dict[str, tuple[float, str]]:
    sq = clients.aws("service-quotas")
    values: dict[str, tuple[float, str]] = {}
    for page in sq.get_paginator("list_service_quotas").paginate(ServiceCode="sagemaker"):
        for q in page.get("Quotas", []):
            values[q["QuotaName"]] = (float(q["Value"]), q["QuotaCode"])
    return values


def instance_demand(cfg: AppConfig) -> Counter[str]:
    demand: Counter[str] = Counter()
    for group in (cfg.hyperpod.gpu_group, cfg.hyperpod.system_group):
        demand[group.instance_type] += group.instance_count
    return demand


def check_quotas(clients: Clients, cfg: AppConfig) -> list[Check]:
    try:
        quotas = _quota_values(clients)
    except (ClientError, BotoCoreError) as exc:
        return [
            Check(
                "quotas",
                "warn",
                f"cannot read quotas: {exc}",
                "grant servicequotas:ListServiceQuotas",
            )
        ]
    checks = []
    for itype, count in sorted(instance_demand(cfg).items()):
        name = f"{itype} for cluster usage"
        stage = f"quota {name}"
        if name not in quotas:
            checks.append(
                Check(
                    stage,
                    "warn",
                    "quota not listed for this account/region",
                    "look it up in the Service Quotas console (Amazon SageMaker)",
                )
            )
            continue
        value, code = quotas[name]
        if value >= count:
            checks.append(Check(stage, "pass", f"{value:g} >= {count} needed"))
        else:
            checks.append(
                Check(
                    stage,
                    "fail",
                    f"{value:g} < {count} needed (instances already running count too)",
                    f"aws service-quotas request-service-quota-increase --service-code sagemaker "
                    f"--quota-code {code} --desired-value {count}",
                )
            )
    return checks


def check_offerings(clients: Clients, cfg: AppConfig) -> list[Check]:
    az_id = cfg.network.hyperpod_subnet.az_id
    ec2 = clients.aws("ec2")
    checks = []
    for itype in sorted(instance_demand(cfg)):
        ec2_type = itype.removeprefix("ml.")
        stage = f"{itype} in {az_id}"
        try:
            pages = ec2.get_paginator("describe_instance_type_offerings").paginate(
                LocationType="availability-zone-id",
                Filters=[{"Name": "instance-type", "Values": [ec2_type]}],
            )
            zones = sorted({o["Location"] for p in pages for o in p["InstanceTypeOfferings"]})
        except (ClientError, BotoCoreError) as exc:
            checks.append(
                Check(
                    stage,
                    "warn",
                    f"cannot read offerings: {exc}",
                    "grant ec2:DescribeInstanceTypeOfferings",
                )
            )
            continue
        if az_id in zones:
            checks.append(
                Check(stage, "pass", "offered (EC2 offering; HyperPod capacity can still be short)")
            )
        else:
            fix = (
                f"set network.hyperpod_subnet.az_id to one of {', '.join(zones)}"
                if zones
                else "pick another region"
            )
            checks.append(Check(stage, "fail", f"not offered in {az_id}", fix))
    return checks


def check_live_cluster(clients: Clients, cfg: AppConfig) -> tuple[list[Check], str, bool]:
    """The kubectl layer's minor and the creator's admin access against the live cluster (one
    DescribeCluster), the minor the later rows check, and whether the cluster exists."""
    layer_minor = cfg.eks.kubernetes_version
    eks_name, _ = cluster_names(cfg)
    try:
        live = clients.aws("eks").describe_cluster(name=eks_name)["cluster"]
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ResourceNotFoundException":
            return (
                [
                    Check(MINOR, "pass", f"{layer_minor}; cluster {eks_name} not created yet"),
                    Check(
                        CREATOR,
                        "pass",
                        f"cluster {eks_name} not created yet: "
                        f"{str(cfg.eks.creator_admin).lower()} at creation",
                    ),
                ],
                layer_minor,
                False,
            )
        return [Check(MINOR, "warn", str(exc), "grant eks:DescribeCluster")], layer_minor, False
    checks = [_minor(cfg, eks_name, live["version"]), _creator_admin(cfg, eks_name, live)]
    return checks, live["version"], True


MINOR, CREATOR = "kubectl layer minor", "creator admin"


def _minor(cfg: AppConfig, eks_name: str, live: str) -> Check:
    """The kubectl layer is pinned to config's minor; a live cluster must run the same one."""
    layer_minor = cfg.eks.kubernetes_version
    if live == layer_minor:
        return Check(MINOR, "pass", f"layer {layer_minor} = cluster {live}")
    return Check(
        MINOR,
        "fail",
        f"layer {layer_minor} but cluster {eks_name} runs {live}",
        f'set eks.kubernetes_version to "{live}" (or upgrade the cluster)',
    )


def _creator_admin(cfg: AppConfig, eks_name: str, live: dict[str, object]) -> Check:
    """EKS gives the creating principal cluster-admin only when it creates the cluster; a
    config that disagrees with the live cluster would make CloudFormation replace it."""
    access = live.get("accessConfig")
    created = (
        access.get("bootstrapClusterCreatorAdminPermissions") if isinstance(access, dict) else None
    )
    want = cfg.eks.creator_admin
    if created is None or created == want:
        return Check(CREATOR, "pass", f"{str(want).lower()} (cluster {eks_name})")
    return Check(
        CREATOR,
        "fail",
        f"cluster {eks_name} was created with {str(created).lower()}, config gives "
        f"{str(want).lower()}: CloudFormation would replace the cluster",
        f"set eks.bootstrap_creator_admin: {str(created).lower()}",
    )
