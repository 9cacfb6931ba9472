"""Preflight for an existing HyperPod EKS cluster (``existing_cluster`` in config).

Instead of quotas and AZ offerings (the cluster's instances already run), it checks that the
named clusters exist and match config: the EKS cluster (minor, access-entry authentication), its
OIDC provider, the HyperPod instance groups, the kubectl role when one is brought, each
add-on's mode against what EKS has installed and, for a private API endpoint, that the kubectl
subnets reach the AWS APIs the handlers call. Where config must change, the fix is the YAML to
paste.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from botocore.exceptions import BotoCoreError, ClientError

from infra.config import AppConfig
from infra.config.addons import ADDON_KEYS
from infra.config.hyperpod import ExistingClusterConfig, InstanceGroupConfig
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.preflight.versions import (
    ADDON_NAMES,
    check_addon_version,
    check_inference_addon_version,
)

CLUSTER_ADMIN = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
SKIPPED_FOR_EXISTING = (
    ("quotas", "the cluster's instances already run: no new HyperPod capacity is requested"),
    ("AZ offerings", "no HyperPod subnet or instance group is created"),
)


def _paste(section: dict[str, Any]) -> str:
    """The YAML to paste into config/<env>.yaml, as one block."""
    return "paste into config:\n" + yaml.safe_dump(section, sort_keys=False).rstrip()


def _error(exc: Exception) -> str:
    if isinstance(exc, ClientError):
        return exc.response["Error"]["Code"]
    return type(exc).__name__


def check_eks_cluster(
    clients: Clients, existing: ExistingClusterConfig, minor: str
) -> tuple[list[Check], dict[str, Any] | None]:
    name = existing.eks_cluster_name
    try:
        cluster: dict[str, Any] = clients.aws("eks").describe_cluster(name=name)["cluster"]
    except (ClientError, BotoCoreError) as exc:
        if _error(exc) == "ResourceNotFoundException":
            return [
                Check(
                    "EKS cluster",
                    "fail",
                    f"{name} not found in {clients.region}",
                    "set existing_cluster.eks_cluster_name to one of `aws eks list-clusters`",
                )
            ], None
        return [Check("EKS cluster", "fail", str(exc), "grant eks:DescribeCluster")], None
    checks = [Check("EKS cluster", "pass", f"{name}: {cluster.get('status', '?')}")]
    live = cluster.get("version", "")
    if live == minor:
        checks.append(Check("kubectl layer minor", "pass", f"layer {minor} = cluster {live}"))
    else:
        checks.append(
            Check(
                "kubectl layer minor",
                "fail",
                f"layer {minor} but cluster {name} runs {live}",
                f'set eks.kubernetes_version to "{live}"',
            )
        )
    mode = cluster.get("accessConfig", {}).get("authenticationMode", "CONFIG_MAP")
    if mode in ("API", "API_AND_CONFIG_MAP"):
        checks.append(Check("access entries", "pass", f"authentication mode {mode}"))
    else:
        checks.append(
            Check(
                "access entries",
                "fail",
                f"authentication mode {mode}: the kubectl handler's access entry needs API",
                f"aws eks update-cluster-config --name {name} "
                "--access-config authenticationMode=API_AND_CONFIG_MAP",
            )
        )
    return checks, cluster


def check_oidc(clients: Clients, existing: ExistingClusterConfig, cluster: dict[str, Any]) -> Check:
    issuer = cluster.get("identity", {}).get("oidc", {}).get("issuer", "")
    try:
        url = clients.aws("iam").get_open_id_connect_provider(
            OpenIDConnectProviderArn=existing.oidc_provider_arn
        )["Url"]
    except (ClientError, BotoCoreError) as exc:
        return Check(
            "OIDC provider",
            "fail",
            f"{existing.oidc_provider_arn}: {_error(exc)}",
            f"eksctl utils associate-iam-oidc-provider --cluster {existing.eks_cluster_name} "
            "--approve, then copy its ARN into existing_cluster.oidc_provider_arn",
        )
    if url.removeprefix("https://") == issuer.removeprefix("https://"):
        return Check("OIDC provider", "pass", f"matches the cluster's issuer {issuer}")
    return Check(
        "OIDC provider",
        "fail",
        f"provider URL {url} is not the cluster's issuer {issuer}",
        "set existing_cluster.oidc_provider_arn to the provider whose URL is the issuer "
        "(aws iam list-open-id-connect-providers)",
    )


def check_kubectl_role(clients: Clients, existing: ExistingClusterConfig) -> list[Check]:
    arn = existing.kubectl_role_arn
    if arn is None:
        return [Check("kubectl role", "pass", "created by the stack with its own access entry")]
    checks = []
    name = arn.rsplit("/", 1)[-1]
    try:
        role = clients.aws("iam").get_role(RoleName=name)["Role"]
        document = role["AssumeRolePolicyDocument"]
        if isinstance(document, str):
            document = json.loads(document)
        trusted = any(
            "lambda.amazonaws.com" in json.dumps(s.get("Principal", {}))
            and s.get("Effect") == "Allow"
            for s in document.get("Statement", [])
        )
        checks.append(
            Check("kubectl role trust", "pass", f"{name} trusts lambda.amazonaws.com")
            if trusted
            else Check(
                "kubectl role trust",
                "fail",
                f"{name} does not trust lambda.amazonaws.com (it is the handler's execution role)",
                "add lambda.amazonaws.com to its trust policy, or remove "
                "existing_cluster.kubectl_role_arn to let the stack create the role",
            )
        )
    except (ClientError, BotoCoreError) as exc:
        checks.append(
            Check("kubectl role trust", "fail", f"{name}: {_error(exc)}", "check the ARN")
        )
    eks = clients.aws("eks")
    cluster = existing.eks_cluster_name
    fix = (
        f"aws eks create-access-entry --cluster-name {cluster} --principal-arn {arn} && "
        f"aws eks associate-access-policy --cluster-name {cluster} --principal-arn {arn} "
        f"--policy-arn {CLUSTER_ADMIN} --access-scope type=cluster"
    )
    try:
        policies = eks.list_associated_access_policies(clusterName=cluster, principalArn=arn)
    except (ClientError, BotoCoreError) as exc:
        if _error(exc) == "ResourceNotFoundException":
            return [*checks, Check("kubectl access entry", "fail", f"none for {arn}", fix)]
        return [*checks, Check("kubectl access entry", "warn", str(exc), "grant eks:List*")]
    admin = [
        p
        for p in policies.get("associatedAccessPolicies", [])
        if p["policyArn"] == CLUSTER_ADMIN and p.get("accessScope", {}).get("type") == "cluster"
    ]
    if admin:
        return [*checks, Check("kubectl access entry", "pass", "cluster admin, cluster scope")]
    return [
        *checks,
        Check("kubectl access entry", "fail", "no AmazonEKSClusterAdminPolicy (cluster)", fix),
    ]


def _group_yaml(group: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": group["InstanceGroupName"],
        "instance_type": group["InstanceType"],
        "instance_count": group.get("TargetCount", group.get("CurrentCount")),
    }


def check_instance_groups(clients: Clients, cfg: AppConfig) -> list[Check]:
    existing = cfg.existing_cluster
    assert existing is not None
    try:
        described = clients.aws("sagemaker").describe_cluster(
            ClusterName=existing.hyperpod_cluster_name
        )
    except (ClientError, BotoCoreError) as exc:
        return [
            Check(
                "HyperPod cluster",
                "fail",
                f"{existing.hyperpod_cluster_name}: {_error(exc)}",
                "set existing_cluster.hyperpod_cluster_name to one of "
                "`aws sagemaker list-clusters`",
            )
        ]
    checks = []
    if described["ClusterArn"] != existing.hyperpod_cluster_arn:
        checks.append(
            Check(
                "HyperPod cluster",
                "fail",
                f"ARN is {described['ClusterArn']}",
                _paste({"existing_cluster": {"hyperpod_cluster_arn": described["ClusterArn"]}}),
            )
        )
    else:
        checks.append(Check("HyperPod cluster", "pass", described.get("ClusterStatus", "")))
    live = {g["InstanceGroupName"]: g for g in described.get("InstanceGroups", [])}
    wanted: dict[str, InstanceGroupConfig] = {
        "gpu_group": cfg.hyperpod.gpu_group,
        "system_group": cfg.hyperpod.system_group,
    }
    for key, group in wanted.items():
        stage = f"instance group {key}"
        found = live.get(group.name)
        if found is None:
            names = ", ".join(f"{n} ({g['InstanceType']})" for n, g in live.items())
            checks.append(
                Check(
                    stage,
                    "fail",
                    f"no group {group.name!r} (the nodes are selected by its name); groups: "
                    f"{names}",
                    f"set hyperpod.{key} to one of them",
                )
            )
            continue
        have = _group_yaml(found)
        if (have["instance_type"], have["instance_count"]) == (
            group.instance_type,
            group.instance_count,
        ):
            checks.append(
                Check(
                    stage,
                    "pass",
                    f"{group.name}: {have['instance_count']} x {have['instance_type']}",
                )
            )
        else:
            checks.append(
                Check(
                    stage,
                    "fail",
                    f"{group.name} is {have['instance_count']} x {have['instance_type']}, config "
                    f"says {group.instance_count} x {group.instance_type}",
                    _paste({"hyperpod": {key: have}}),
                )
            )
    return checks


def _offered(clients: Clients, cfg: AppConfig, key: str, minor: str) -> Check:
    """The version this app will install is offered for the cluster's minor."""
    if key == "inference_operator":
        return check_inference_addon_version(clients, cfg, minor)
    version = cfg.addons.settings(key).version
    return check_addon_version(clients, ADDON_NAMES[key], version, f"addons.{key}.version", minor)


def check_addons(clients: Clients, cfg: AppConfig, minor: str) -> list[Check]:
    """Each add-on's mode against what EKS has installed; for one this app will create, whether
    EKS offers its pinned version for the cluster's ``minor``."""
    existing = cfg.existing_cluster
    assert existing is not None
    eks = clients.aws("eks")
    cluster = existing.eks_cluster_name
    try:
        installed = set(eks.list_addons(clusterName=cluster).get("addons", []))
    except (ClientError, BotoCoreError) as exc:
        return [Check("add-ons", "warn", f"cannot list add-ons: {exc}", "grant eks:ListAddons")]
    checks = []
    for key in ADDON_KEYS:
        settings = cfg.addons.settings(key)
        if not (cfg.addons.enabled and settings.enabled):
            continue
        name = ADDON_NAMES[key]
        stage = f"add-on {name}"
        if name not in installed:
            if settings.mode == "create":
                checks.append(Check(stage, "pass", "not installed: create (this app installs it)"))
                checks.append(_offered(clients, cfg, key, minor))
            else:
                checks.append(
                    Check(
                        stage,
                        "fail",
                        f"not installed as an EKS add-on, config says {settings.mode}",
                        _paste({"addons": {key: {"mode": "create"}}})
                        + "\n(or install it yourself and keep skip)",
                    )
                )
            continue
        addon = eks.describe_addon(clusterName=cluster, addonName=name)["addon"]
        adopted = {
            "mode": "adopt",
            "version": addon["addonVersion"],
            "adopted_role_arn": addon.get("serviceAccountRoleArn"),
            "adopted_configuration": addon.get("configurationValues") or None,
        }
        adopted = {k: v for k, v in adopted.items() if v is not None}
        if settings.mode == "skip":
            checks.append(Check(stage, "pass", f"{addon['addonVersion']} installed: skip"))
        elif settings.mode == "create":
            checks.append(
                Check(
                    stage,
                    "fail",
                    f"{addon['addonVersion']} already installed: create would fail",
                    _paste({"addons": {key: {"mode": "skip"}}})
                    + "\n(recommended; or take it over as it is:)\n"
                    + _paste({"addons": {key: adopted}}),
                )
            )
        else:
            declared = {
                "version": settings.version,
                "adopted_role_arn": settings.adopted_role_arn,
                "adopted_configuration": settings.adopted_configuration,
            }
            differs = [k for k, v in declared.items() if v != adopted.get(k)]
            if differs:
                checks.append(
                    Check(
                        stage,
                        "fail",
                        f"adopt declares other {', '.join(differs)} than installed "
                        "(the import must describe it as it is)",
                        _paste({"addons": {key: adopted}}),
                    )
                )
            else:
                checks.append(Check(stage, "pass", f"adopt {addon['addonVersion']} as installed"))
    return checks
