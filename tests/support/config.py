"""Configs the tests build: dev.yaml as a raw mapping with changes, the one line a change to it gets
refused with, the existing-cluster settings, and the variants the suite synthesizes and renders.

``parse_config`` checks a lock only when it is given one, so these parse as their environment
whatever k8s/locks/ records; the lock tests pass the lock they mean.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from infra.config import AppConfig, ConfigError, load_config, parse_config
from infra.config.loader import CONFIG_DIR
from infra.environment.fsx import FsxVolume

SOURCE = "config/dev.yaml"
ENV = "dev"
ACCOUNT = "111122223333"
BASE: dict[str, Any] = yaml.safe_load((CONFIG_DIR / "dev.yaml").read_text())


def env_raw(env: str = ENV) -> dict[str, Any]:
    """``config/<env>.yaml`` as a raw mapping (a fresh copy: change it freely)."""
    if env == ENV:
        return copy.deepcopy(BASE)
    raw: dict[str, Any] = yaml.safe_load((CONFIG_DIR / f"{env}.yaml").read_text())
    return raw


# The clusters of the smallest config, as the doubles' worlds (Stubber responses, FakeKube,
# moto) name them; left out, the names would be derived: hyperpod-kvcache-dev.
SMALL_CLUSTERS: dict[str, Any] = {
    "eks": {"cluster_name": "hyperpod-kvcache"},
    "hyperpod": {"cluster_name": "hyperpod-kvcache"},
}


# The smallest config's endpoint reads its weights from a bucket of the team's (the default is a
# placeholder, which preflight refuses).
SMALL_KVCACHE: dict[str, Any] = {"endpoints": [{"model": {"s3_bucket": "team-weights"}}]}


def make_cfg(**overrides: Any) -> AppConfig:
    """The smallest config: every default but the clusters' names (SMALL_CLUSTERS) and the
    weights' bucket (SMALL_KVCACHE), environment dev in the test account."""
    raw: dict[str, Any] = {"environment": ENV, "account": ACCOUNT, "kvcache": SMALL_KVCACHE}
    raw.update(overrides)
    for section, names in SMALL_CLUSTERS.items():
        given = raw.get(section, {})
        if isinstance(given, dict):
            raw[section] = {**names, **given}
    return parse_config(raw, "test")


def with_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """BASE with each ``a.b.0.c`` path set (a number indexes a list). With ``existing_cluster``
    set and ``network`` not, BASE's network section goes: the cluster brings its own."""
    raw = env_raw()
    if "existing_cluster" in overrides and not any(p.startswith("network") for p in overrides):
        raw.pop("network", None)
    for path, value in overrides.items():
        node: Any = raw
        *parents, leaf = path.split(".")
        for key in parents:
            if isinstance(node, list):
                node = node[int(key)]
            else:
                node = node.setdefault(key, [{}] if key == "endpoints" else {})
        node[leaf] = value
    return raw


def refusal(overrides: dict[str, Any], lock: dict[str, Any] | None = None) -> str | None:
    """The line that refuses BASE with ``overrides`` (always one line), or None if accepted;
    ``lock``: the environment's lock file as it would read."""
    try:
        parse_config(with_overrides(overrides), SOURCE, ENV, lock=lock)
    except ConfigError as err:
        assert "\n" not in str(err)
        return str(err)
    return None


# --- an existing cluster -----------------------------------------------------------------------

# The existing EKS and HyperPod clusters a team brings, with the kubectl role it grants the app.
EXISTING_CLUSTER: dict[str, Any] = {
    "eks_cluster_name": "team-eks",
    "hyperpod_cluster_name": "team-hyperpod",
    "hyperpod_cluster_arn": f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:cluster/abcdef123456",
    "kubectl_role_arn": f"arn:aws:iam::{ACCOUNT}:role/team-kubectl",
    "oidc_provider_arn": f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.us-west-2."
    "amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE",
    # The cluster's VPC: the ALB controller's role creates security groups there only.
    "vpc_id": "vpc-0beef1111aaaa2222",
}

# Existing-cluster mode needs the instance groups written out (infra/config/rules.py).
EXISTING_GROUPS: dict[str, Any] = {
    "gpu_group": {"name": "gpu", "instance_type": "ml.g6e.4xlarge", "instance_count": 2},
    "system_group": {"name": "system", "instance_type": "ml.c5.4xlarge", "instance_count": 1},
}


def use_existing_cluster(raw: dict[str, Any], cluster: dict[str, Any]) -> None:
    """Point the config ``raw`` at ``cluster``: it brings its own network, so the section goes."""
    raw["existing_cluster"] = cluster
    raw.pop("network", None)


def existing_cluster(**changes: Any) -> dict[str, Any]:
    """``existing_cluster`` settings: EXISTING_CLUSTER with ``changes`` (None leaves a key out,
    e.g. ``kubectl_role_arn=None``: the stack creates the handler role)."""
    out = {**EXISTING_CLUSTER, **changes}
    return {key: value for key, value in out.items() if value is not None}


def existing_cluster_config() -> AppConfig:
    """dev pointed at an existing cluster with a kubectl role the team brings (public endpoint)."""
    raw = env_raw()
    use_existing_cluster(raw, existing_cluster())
    return parse_config(raw, f"{SOURCE} (existing-cluster variant)", ENV)


# What the console's Quick Install creates for the walk-through's reader (names as in the AWS
# blog): an EKS cluster hyperpod-cluster-eks and its HyperPod cluster; no kubectl role.
QUICK_INSTALL_CLUSTER = existing_cluster(
    eks_cluster_name="hyperpod-cluster-eks",
    hyperpod_cluster_name="hyperpod-cluster",
    hyperpod_cluster_arn=f"arn:aws:sagemaker:us-west-2:{ACCOUNT}:cluster/qi0123456789",
    kubectl_role_arn=None,
    oidc_provider_arn=f"arn:aws:iam::{ACCOUNT}:oidc-provider/oidc.eks.us-west-2."
    "amazonaws.com/id/QUICKINSTALL0123456789ABCDEF",
    vpc_id="vpc-0aaaa1111bbbb2222",
)
QUICK_INSTALL_PRIVATE = {
    "vpc_id": "vpc-0aaaa1111bbbb2222",
    "kubectl_subnet_ids": ["subnet-0aaaa1111bbbb2222", "subnet-0cccc3333dddd4444"],
    "kubectl_security_group_id": "sg-0eeee5555ffff6666",
}

# The owner's add-ons as DescribeAddon shows them on such a cluster (role and bucket names are
# made up; what matters is that they are not this app's).
QUICK_INSTALL_S3_ROLE = f"arn:aws:iam::{ACCOUNT}:role/hyperpod-cluster-s3-csi"
QUICK_INSTALL_OPERATOR_CONFIGURATION = (
    '{"executionRoleArn":"arn:aws:iam::111122223333:role/SageMakerHyperPodInference-qi",'
    '"tlsCertificateS3Bucket":"hyperpod-tls-qi-111122223333",'
    '"hyperpodClusterArn":"arn:aws:sagemaker:us-west-2:111122223333:cluster/qi0123456789",'
    '"alb":{"enabled":true,"serviceAccount":{"create":true,'
    '"roleArn":"arn:aws:iam::111122223333:role/hyperpod-cluster-alb"}},'
    '"keda":{"enabled":true,"auth":{"aws":{"irsa":{"enabled":true,'
    '"roleArn":"arn:aws:iam::111122223333:role/hyperpod-cluster-keda"}}}}}'
)
QUICK_INSTALL_ADOPTED: dict[str, dict[str, Any]] = {
    "cert_manager": {"mode": "adopt"},
    "metrics_server": {"mode": "adopt"},
    "fsx_csi": {"mode": "adopt"},  # its role reaches it through a pod identity association
    "s3_csi": {"mode": "adopt", "adopted_role_arn": QUICK_INSTALL_S3_ROLE},
    "inference_operator": {
        "mode": "adopt",
        "adopted_configuration": QUICK_INSTALL_OPERATOR_CONFIGURATION,
    },
    "ebs_csi": {"mode": "create"},  # Quick Install does not install it
}


def quick_install_private_config(**overrides: Any) -> AppConfig:
    """A Quick-Install-shaped cluster reached through a private endpoint; no kubectl role given
    (the stack creates the handler role and its access entry); the five add-ons Quick Install
    installs on ``adopt`` with the values preflight prints, EBS CSI on ``create``."""
    raw = env_raw()
    use_existing_cluster(raw, {**QUICK_INSTALL_CLUSTER, **QUICK_INSTALL_PRIVATE})
    raw["addons"] = {**raw.get("addons", {}), **QUICK_INSTALL_ADOPTED}
    raw.update(overrides)
    return parse_config(raw, f"{SOURCE} (Quick Install, private endpoint)", ENV)


def all_skip_config() -> AppConfig:
    """A Quick-Install-shaped cluster with every add-on on ``skip`` (the recommended setup)."""
    raw = env_raw()
    use_existing_cluster(raw, dict(QUICK_INSTALL_CLUSTER))
    raw["addons"] = {key: {"mode": "skip"} for key in QUICK_INSTALL_ADOPTED}
    return parse_config(raw, f"{SOURCE} (Quick Install, all skip)", ENV)


# --- the shared tier on FSx for Lustre ---------------------------------------------------------

# The FSx variant of an environment: the shared tier on FSx for Lustre and its S3 link.
# Confirmed: dev's committed lock records Curvine.
FSX_VARIANT = "fsx"
FSX_KVCACHE: dict[str, Any] = {
    "l2_backend": "fsx_lustre",
    "l2_backend_switch_confirmed": True,
    "fsx": {"data_repository": {"bucket": "amzn-s3-demo-kv-archive", "bucket_region": "us-west-2"}},
}

# The file system as a deployed kvcache stack reports it (outputs L2FileSystemId, ...): what
# `make manifests` writes into the FSx PersistentVolume.
DEPLOYED_FSX = FsxVolume(
    "fs-0123456789abcdef0", "fs-0123456789abcdef0.fsx.us-west-2.amazonaws.com", "abcdefgh"
)


def fsx_config(env: str = ENV) -> AppConfig:
    """``config/<env>.yaml`` with the shared tier on FSx for Lustre (and its S3 link)."""
    raw = env_raw(env)
    raw["kvcache"] = {**raw.get("kvcache", {}), **FSX_KVCACHE}
    return parse_config(raw, f"config/{env}.yaml (fsx variant)", env)


# The tiers variant: dev with one endpoint per backend the environment can hold together
# (Curvine and FSx do not share one: FSx has its variant above). The two with a shared tier run
# two replicas each, so cross-node reuse can be shown on both; five single-GPU nodes hold them.
TIERS_VARIANT = "tiers"
# A namespace whose endpoints are all on managed tiers: no L2 claim, no Kyverno policy there, yet
# the endpoints' admission policy and ingress fence must hold in it as in the others.
MANAGED_NAMESPACE = "inference-managed"
TIERS_ENDPOINTS: dict[str, tuple[str, int, str]] = {
    # name -> (l2_backend, replicas, namespace)
    "qwen3-8b": ("curvine", 2, "inference"),
    "qwen3-8b-ts": ("tieredstorage", 2, MANAGED_NAMESPACE),
    "qwen3-8b-l1": ("none", 1, MANAGED_NAMESPACE),
}


def tiers_config(env: str = ENV) -> AppConfig:
    """``config/<env>.yaml`` with one endpoint per backend (``TIERS_ENDPOINTS``)."""
    raw = env_raw(env)
    (base,) = raw["kvcache"]["endpoints"]
    raw["kvcache"]["endpoints"] = [
        {**base, "name": name, "l2_backend": backend, "replicas": replicas, "namespace": ns}
        for name, (backend, replicas, ns) in TIERS_ENDPOINTS.items()
    ]
    raw["hyperpod"]["gpu_group"]["instance_count"] = 5
    return parse_config(raw, f"config/{env}.yaml (tiers variant)", env)


def env_config(env: str) -> AppConfig:
    """The config of a shipped environment, or of the FSx or tiers variant of dev."""
    if env == TIERS_VARIANT:
        return tiers_config()
    return fsx_config() if env == FSX_VARIANT else load_config(env)


def env_fsx(env: str) -> FsxVolume | None:
    """The deployed file system the environment's manifests name (None: no FSx L2)."""
    return DEPLOYED_FSX if env == FSX_VARIANT else None
