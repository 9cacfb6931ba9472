"""Synthesize an environment once and read its templates back (shared by the synth tests)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from aws_cdk.assertions import Template

from infra.cdk_context import new_app
from infra.config import AppConfig, load_config, parse_config
from infra.config.loader import CONFIG_DIR
from infra.nag import enable_checks
from stacks.composition import EnvironmentStacks, compose

FIXTURE_CHART = Path(__file__).parent / "fixtures" / "hyperpod-chart"


@dataclass
class Synth:
    config: AppConfig
    outdir: Path
    stacks: EnvironmentStacks

    def template_json(self, suffix: str) -> dict[str, Any]:
        path = self.outdir / f"{self.config.stack_prefix}-{suffix}.template.json"
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def template(self, suffix: str) -> Template:
        return Template.from_json(self.template_json(suffix))

    def resources(self, suffix: str, type_: str) -> dict[str, dict[str, Any]]:
        return {
            k: v for k, v in self.template_json(suffix)["Resources"].items() if v["Type"] == type_
        }


def synth(config: AppConfig, outdir: Path, chart_dir: Path | None = FIXTURE_CHART) -> Synth:
    app = new_app(str(outdir))
    stacks = compose(app, config, chart_dir=chart_dir)
    enable_checks(app)
    app.synth()
    return Synth(config=config, outdir=outdir, stacks=stacks)


def dev_config() -> AppConfig:
    return load_config("dev")


def _dev_raw() -> dict[str, Any]:
    raw: dict[str, Any] = yaml.safe_load((CONFIG_DIR / "dev.yaml").read_text())
    return raw


def existing_cluster_config() -> AppConfig:
    """dev pointed at an existing cluster with a kubectl role the team brings (public endpoint)."""
    raw = _dev_raw()
    raw["existing_cluster"] = {
        "eks_cluster_name": "team-eks",
        "hyperpod_cluster_name": "team-hyperpod",
        "hyperpod_cluster_arn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
        "kubectl_role_arn": "arn:aws:iam::111122223333:role/team-kubectl",
        "oidc_provider_arn": "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2."
        "amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE",
    }
    return parse_config(raw, "config/dev.yaml (existing-cluster variant)", "dev")


# Existing-cluster mode needs the instance groups written out (infra/config/rules.py).
EXISTING_GROUPS: dict[str, Any] = {
    "gpu_group": {"name": "gpu", "instance_type": "ml.g6e.4xlarge", "instance_count": 2},
    "system_group": {"name": "system", "instance_type": "ml.c5.4xlarge", "instance_count": 1},
}

# What the console's Quick Install creates for the walk-through's reader (names as in the AWS
# blog): an EKS cluster hyperpod-cluster-eks and its HyperPod cluster.
QUICK_INSTALL_CLUSTER = {
    "eks_cluster_name": "hyperpod-cluster-eks",
    "hyperpod_cluster_name": "hyperpod-cluster",
    "hyperpod_cluster_arn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/qi0123456789",
    "oidc_provider_arn": "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2."
    "amazonaws.com/id/QUICKINSTALL0123456789ABCDEF",
}
QUICK_INSTALL_PRIVATE = {
    "vpc_id": "vpc-0aaaa1111bbbb2222",
    "kubectl_subnet_ids": ["subnet-0aaaa1111bbbb2222", "subnet-0cccc3333dddd4444"],
    "kubectl_security_group_id": "sg-0eeee5555ffff6666",
}


# The owner's add-ons as DescribeAddon shows them on such a cluster (role and bucket names are
# made up; what matters is that they are not this app's).
QUICK_INSTALL_S3_ROLE = "arn:aws:iam::111122223333:role/hyperpod-cluster-s3-csi"
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
    raw = _dev_raw()
    raw["existing_cluster"] = {**QUICK_INSTALL_CLUSTER, **QUICK_INSTALL_PRIVATE}
    raw["addons"] = {**raw.get("addons", {}), **QUICK_INSTALL_ADOPTED}
    raw.update(overrides)
    return parse_config(raw, "config/dev.yaml (Quick Install, private endpoint)", "dev")


def all_skip_config() -> AppConfig:
    """A Quick-Install-shaped cluster with every add-on on ``skip`` (the recommended setup)."""
    raw = _dev_raw()
    raw["existing_cluster"] = dict(QUICK_INSTALL_CLUSTER)
    raw["addons"] = {key: {"mode": "skip"} for key in QUICK_INSTALL_ADOPTED}
    return parse_config(raw, "config/dev.yaml (Quick Install, all skip)", "dev")
