"""Versions preflight asks about in both modes: the local tools (kubectl, helm, node), the
Kubernetes minor EKS offers, and each add-on version this app installs."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Callable

from botocore.exceptions import BotoCoreError, ClientError

from infra.config import AppConfig
from infra.config.addons import ADDON_KEYS
from infra.config.operator_versions import ADDON_NAME
from infra.facts.versions import SUPPORTED_KUBERNETES
from scripts.lib.checks import Check
from scripts.lib.clients import Clients

# (argv) -> (exit code, stdout); None when the tool is not on PATH.
ToolRunner = Callable[[list[str]], tuple[int, str] | None]
MIN_NODE_MAJOR = 18  # aws-cdk CLI's minimum
MIN_HELM = (3, 8)  # OCI chart support


def run_tool(argv: list[str]) -> tuple[int, str] | None:
    if shutil.which(argv[0]) is None:
        return None
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    return proc.returncode, proc.stdout + proc.stderr


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


# addons.<key> -> EKS add-on name (as infra/constructs/addons declares them).
ADDON_NAMES = {
    "cert_manager": "cert-manager",
    "s3_csi": "aws-mountpoint-s3-csi-driver",
    "fsx_csi": "aws-fsx-csi-driver",
    "metrics_server": "metrics-server",
    "ebs_csi": "aws-ebs-csi-driver",
    "inference_operator": "amazon-sagemaker-hyperpod-inference",
}
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
    lists the minors HyperPod supports: that list is infra/facts/versions.py's, from its docs."""
    stage = f"Kubernetes {minor}"
    try:
        pages = clients.aws("eks").get_paginator("describe_cluster_versions").paginate()
        listed = {v["clusterVersion"]: v for p in pages for v in p.get("clusterVersions", [])}
    except (ClientError, BotoCoreError) as exc:
        return Check(
            stage, "warn", f"cannot list EKS versions: {exc}", "grant eks:DescribeClusterVersions"
        )
    ours = [m for m in SUPPORTED_KUBERNETES if m in listed and m != minor]
    found = listed.get(minor)
    if found is None or found.get("versionStatus") == "UNSUPPORTED":
        return Check(
            stage,
            "fail",
            f"EKS in {clients.region} offers no Kubernetes {minor}",
            f"set eks.kubernetes_version to one of {', '.join(ours)}"
            if ours
            else "run `aws eks describe-cluster-versions` and pick a minor "
            "infra/facts/versions.py pins",
        )
    end = found.get("endOfStandardSupportDate")
    until = f"{end:%Y-%m-%d}" if end else "?"
    if found.get("versionStatus") == "EXTENDED_SUPPORT":
        newer = [m for m in ours if listed[m].get("versionStatus") == "STANDARD_SUPPORT"]
        return Check(
            stage,
            "warn",
            f"in EKS extended support since {until}: the control plane is billed "
            "at the extended-support rate",
            f"set eks.kubernetes_version to {newer[-1]}"
            if newer
            else "pin a newer minor that HyperPod supports in infra/facts/versions.py "
            "(docs/node-readiness-and-versions.md)",
        )
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
    clients: Clients,
    name: str,
    version: str,
    field: str,
    minor: str,
    *,
    why: str = "",
    fix_suffix: str = "",
) -> Check:
    """EKS offers add-on ``name`` at the pinned ``version`` (config ``field``) for ``minor``."""
    stage = f"{name} {version}"
    try:
        offered = offered_addon_versions(clients, name, minor)
    except (ClientError, BotoCoreError) as exc:
        return Check(
            stage, "warn", f"cannot list add-on versions: {exc}", "grant eks:DescribeAddonVersions"
        )
    if version in offered:
        return Check(stage, "pass", f"offered for Kubernetes {minor}{why}")
    if not offered:
        return Check(
            stage,
            "fail",
            f"EKS offers no {name} version for Kubernetes {minor} in {clients.region}",
            "use a region and Kubernetes minor where `aws eks "
            f"describe-addon-versions --addon-name {name}` lists it",
        )
    shown = ", ".join(offered[:SHOWN])
    return Check(
        stage,
        "fail",
        f"{field} = {version}: not offered for Kubernetes {minor} in "
        f"{clients.region}; offered: {shown}",
        f"set {field} to one of {shown}{fix_suffix}",
    )


def check_inference_addon_version(clients: Clients, cfg: AppConfig, minor: str) -> Check:
    """EKS offers the pinned inference add-on version for the cluster's Kubernetes minor."""
    addon = cfg.addons.inference_operator
    if not (cfg.addons.enabled and addon.enabled):
        return Check(
            f"{ADDON_NAME} {addon.version}", "skip", "addons.inference_operator.enabled is false"
        )
    return check_addon_version(
        clients,
        ADDON_NAME,
        addon.version,
        "addons.inference_operator.version",
        minor,
        why=f" (operator {addon.operator.version})",
        fix_suffix=" after adding it and its operator's CRD to infra/config/operator_versions.py",
    )


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
            checks.append(
                check_addon_version(
                    clients, ADDON_NAMES[key], item.version, f"addons.{key}.version", minor
                )
            )
    return checks
