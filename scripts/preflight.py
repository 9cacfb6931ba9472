"""Can this account, AZ and workstation deploy the environment? One row per check."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable

from botocore.exceptions import BotoCoreError, ClientError

from infra.config import AppConfig
from infra.config.addons import ADDON_KEYS
from infra.config.operator_versions import ADDON_NAME
from infra.versions import SUPPORTED_KUBERNETES
from scripts.clients import Clients
from scripts.common import Check, describe_failure
from scripts.preflight_existing import ADDON_NAMES, run_existing_preflight
from scripts.verify import cluster_names

# (argv) -> (exit code, stdout); None when the tool is not on PATH.
ToolRunner = Callable[[list[str]], tuple[int, str] | None]

MIN_NODE_MAJOR = 18  # aws-cdk CLI's minimum
MIN_HELM = (3, 8)  # OCI chart support


def run_tool(argv: list[str]) -> tuple[int, str] | None:
    if shutil.which(argv[0]) is None:
        return None
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    return proc.returncode, proc.stdout + proc.stderr


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


def _version(text: str, pattern: str) -> tuple[int, ...] | None:
    m = re.search(pattern, text)
    return tuple(int(x) for x in m.groups()) if m else None


def check_tools(run: ToolRunner, target_minor: str) -> list[Check]:
    checks = []
    want = tuple(int(x) for x in target_minor.split("."))
    out = run(["kubectl", "version", "--client", "-o", "json"])
    if out is None:
        checks.append(Check("kubectl", "fail", "not on PATH", "install kubectl " + target_minor))
    else:
        try:
            info = json.loads(out[1])["clientVersion"]
            have = (int(info["major"]), int(re.sub(r"\D", "", info["minor"])))
        except (ValueError, KeyError):
            have = None
        if have is None:
            checks.append(
                Check(
                    "kubectl", "warn", "cannot read its version", "run `kubectl version --client`"
                )
            )
        elif have[0] == want[0] and abs(have[1] - want[1]) <= 1:
            checks.append(
                Check(
                    "kubectl",
                    "pass",
                    f"client {have[0]}.{have[1]}, cluster {target_minor} (skew <= 1)",
                )
            )
        else:
            checks.append(
                Check(
                    "kubectl",
                    "fail",
                    f"client {have[0]}.{have[1]} vs cluster {target_minor}: skew > 1",
                    f"install kubectl {target_minor}",
                )
            )
    out = run(["helm", "version", "--short"])
    if out is None:
        checks.append(Check("helm", "fail", "not on PATH", "install helm 3.8 or later"))
    else:
        v = _version(out[1], r"v(\d+)\.(\d+)")
        ok = v is not None and v[:2] >= MIN_HELM
        checks.append(
            Check(
                "helm",
                "pass" if ok else "fail",
                out[1].strip()[:60],
                "" if ok else "install helm 3.8 or later",
            )
        )
    out = run(["node", "--version"])
    if out is None:
        checks.append(
            Check(
                "node",
                "fail",
                "not on PATH",
                f"install Node.js {MIN_NODE_MAJOR}+ (the CDK CLI needs it)",
            )
        )
    else:
        v = _version(out[1], r"v(\d+)\.")
        ok = v is not None and v[0] >= MIN_NODE_MAJOR
        checks.append(
            Check(
                "node",
                "pass" if ok else "fail",
                out[1].strip(),
                "" if ok else f"install Node.js {MIN_NODE_MAJOR}+",
            )
        )
    return checks


def check_cluster_minor(clients: Clients, cfg: AppConfig) -> tuple[Check, str]:
    """The kubectl layer is pinned to config's minor; a live cluster must run the same one."""
    layer_minor = cfg.eks.kubernetes_version
    eks_name, _ = cluster_names(cfg)
    try:
        live = clients.aws("eks").describe_cluster(name=eks_name)["cluster"]["version"]
    except ClientError as exc:
        if exc.response["Error"]["Code"] == "ResourceNotFoundException":
            return Check(
                "kubectl layer minor", "pass", f"{layer_minor}; cluster {eks_name} not created yet"
            ), layer_minor
        return Check(
            "kubectl layer minor", "warn", str(exc), "grant eks:DescribeCluster"
        ), layer_minor
    if live == layer_minor:
        return Check("kubectl layer minor", "pass", f"layer {layer_minor} = cluster {live}"), live
    return (
        Check(
            "kubectl layer minor",
            "fail",
            f"layer {layer_minor} but cluster {eks_name} runs {live}",
            f'set eks.kubernetes_version to "{live}" (or upgrade the cluster)',
        ),
        live,
    )


# eks.addons.<key> -> EKS add-on name (as infra/constructs/eks_cluster.py installs them).
CORE_ADDON_NAMES = {
    "vpc_cni": "vpc-cni",
    "kube_proxy": "kube-proxy",
    "coredns": "coredns",
    "pod_identity_agent": "eks-pod-identity-agent",
}
SHOWN = 4  # offered versions named in a row (EKS lists the newest first)


def check_kubernetes_minor(clients: Clients, minor: str) -> Check:
    """EKS offers ``minor`` in this Region (DescribeClusterVersions). SageMaker has no API that
    lists the minors HyperPod supports: that list is infra/versions.py's, from its docs."""
    stage = f"Kubernetes {minor}"
    try:
        pages = clients.aws("eks").get_paginator("describe_cluster_versions").paginate()
        listed = {v["clusterVersion"]: v for p in pages for v in p.get("clusterVersions", [])}
    except (ClientError, BotoCoreError) as exc:
        return Check(stage, "warn", f"cannot list EKS versions: {exc}",
                     "grant eks:DescribeClusterVersions")  # fmt: skip
    ours = [m for m in SUPPORTED_KUBERNETES if m in listed and m != minor]
    found = listed.get(minor)
    if found is None or found.get("versionStatus") == "UNSUPPORTED":
        return Check(
            stage, "fail", f"EKS in {clients.region} offers no Kubernetes {minor}",
            f"set eks.kubernetes_version to one of {', '.join(ours)}" if ours
            else "run `aws eks describe-cluster-versions` and pick a minor infra/versions.py pins",
        )  # fmt: skip
    end = found.get("endOfStandardSupportDate")
    until = f"{end:%Y-%m-%d}" if end else "?"
    if found.get("versionStatus") == "EXTENDED_SUPPORT":
        newer = [m for m in ours if listed[m].get("versionStatus") == "STANDARD_SUPPORT"]
        return Check(
            stage, "warn", f"in EKS extended support since {until}: the control plane is billed "
            "at the extended-support rate",
            f"set eks.kubernetes_version to {newer[-1]}" if newer
            else "pin a newer minor that HyperPod supports in infra/versions.py "
            "(docs/node-readiness-and-versions.md)",
        )  # fmt: skip
    return Check(stage, "pass", f"offered by EKS, standard support until {until}")


def offered_addon_versions(clients: Clients, name: str, minor: str) -> list[str]:
    pages = (
        clients.aws("eks")
        .get_paginator("describe_addon_versions")
        .paginate(addonName=name, kubernetesVersion=minor)
    )
    return [
        v["addonVersion"]
        for page in pages
        for a in page.get("addons", [])
        if a.get("addonName") == name
        for v in a.get("addonVersions", [])
    ]


def check_addon_version(
    clients: Clients, name: str, version: str, field: str, minor: str, *, why: str = "",
    fix_suffix: str = "",
) -> Check:  # fmt: skip
    """EKS offers add-on ``name`` at the pinned ``version`` (config ``field``) for ``minor``."""
    stage = f"{name} {version}"
    try:
        offered = offered_addon_versions(clients, name, minor)
    except (ClientError, BotoCoreError) as exc:
        return Check(stage, "warn", f"cannot list add-on versions: {exc}",
                     "grant eks:DescribeAddonVersions")  # fmt: skip
    if version in offered:
        return Check(stage, "pass", f"offered for Kubernetes {minor}{why}")
    if not offered:
        return Check(
            stage, "fail", f"EKS offers no {name} version for Kubernetes {minor} in "
            f"{clients.region}", "use a region and Kubernetes minor where `aws eks "
            f"describe-addon-versions --addon-name {name}` lists it",
        )  # fmt: skip
    shown = ", ".join(offered[:SHOWN])
    return Check(
        stage, "fail", f"{field} = {version}: not offered for Kubernetes {minor} in "
        f"{clients.region}; offered: {shown}",
        f"set {field} to one of {shown}{fix_suffix}",
    )  # fmt: skip


def check_inference_addon_version(clients: Clients, cfg: AppConfig, minor: str) -> Check:
    """EKS offers the pinned inference add-on version for the cluster's Kubernetes minor."""
    addon = cfg.addons.inference_operator
    if not (cfg.addons.enabled and addon.enabled):
        return Check(f"{ADDON_NAME} {addon.version}", "skip",
                     "addons.inference_operator.enabled is false")  # fmt: skip
    return check_addon_version(
        clients, ADDON_NAME, addon.version, "addons.inference_operator.version", minor,
        why=f" (operator {addon.operator.version})",
        fix_suffix=" after adding it and its operator's CRD to infra/config/operator_versions.py",
    )  # fmt: skip


def check_addon_versions(clients: Clients, cfg: AppConfig, minor: str) -> list[Check]:
    """One row per add-on version this app installs: the EKS core add-ons, then the platform
    add-ons (the inference add-on names its operator)."""
    checks = [
        check_addon_version(clients, name, getattr(cfg.eks.addons, key), f"eks.addons.{key}", minor)
        for key, name in CORE_ADDON_NAMES.items()
    ]
    for key in ADDON_KEYS:
        item = cfg.addons.settings(key)
        if not (cfg.addons.enabled and item.enabled):
            continue
        if key == "inference_operator":
            checks.append(check_inference_addon_version(clients, cfg, minor))
        else:
            checks.append(check_addon_version(clients, ADDON_NAMES[key], item.version,
                                              f"addons.{key}.version", minor))  # fmt: skip
    return checks


def run_preflight(clients: Clients, cfg: AppConfig, run: ToolRunner = run_tool) -> list[Check]:
    identity, answered = _identity(clients, cfg)
    checks = [identity]
    if not answered:
        # Without working credentials every AWS check would fail the same way: skip them.
        reason = "skipped: needs working AWS credentials (see the credentials row)"
        stages = [f"quota {t} for cluster usage" for t in sorted(instance_demand(cfg))]
        stages += [
            f"{t} in {cfg.network.hyperpod_subnet.az_id}" for t in sorted(instance_demand(cfg))
        ]
        stages.append("kubectl layer minor")
        stages.append(f"Kubernetes {cfg.eks.kubernetes_version}")
        checks += [Check(stage, "skip", reason) for stage in stages]
        return checks + check_tools(run, cfg.eks.kubernetes_version)
    if cfg.existing_cluster is not None:
        return run_existing_preflight(clients, cfg, run, identity)
    checks += check_quotas(clients, cfg)
    checks += check_offerings(clients, cfg)
    minor_check, cluster_minor = check_cluster_minor(clients, cfg)
    checks.append(minor_check)
    checks.append(check_kubernetes_minor(clients, cluster_minor))
    checks += check_addon_versions(clients, cfg, cluster_minor)
    checks += check_tools(run, cluster_minor)
    return checks
