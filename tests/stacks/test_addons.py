"""Synthesized template of the add-ons stack on a cluster created by the app.

Double: none. A real ``aws_eks_v2.Cluster`` lives in one stack and the AddonsStack in another, so
every reference between them (cluster name, OIDC provider, issuer) crosses a stack boundary as it
does in the app. The app is synthesized once per module; tests read the template with
``aws_cdk.assertions`` and cfn-lint reads the written template file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import aws_cdk as cdk
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.assertions import Template
from cfnlint.api import ManualArgs, lint_file

from infra.cdk.context import new_app
from infra.config import AppConfig, parse_config
from infra.constructs.addons import service_accounts as sa
from infra.facts.versions import SUPPORTED_KUBERNETES
from stacks.addons_stack import AddonsStack

HYPERPOD_ARN = "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef012345"
ISSUER = "ISSUER"
MODEL_BUCKET = "my-model-weights"


def make_config(extra: dict[str, Any] | None = None) -> AppConfig:
    raw: dict[str, Any] = {
        "account": "111122223333",
        "addons": {"s3_csi": {"model_bucket_names": [MODEL_BUCKET]}},
    }
    raw.update(extra or {})
    return parse_config(raw, "test", "test")


class Synth:
    def __init__(self, outdir: Path) -> None:
        self.config = make_config()
        app = new_app(str(outdir))
        env = cdk.Environment(account=self.config.account, region=self.config.region)
        pins = SUPPORTED_KUBERNETES[self.config.eks.kubernetes_version]
        cluster_stack = cdk.Stack(app, "Eks", env=env)
        cluster = eks.Cluster(
            cluster_stack,
            "Cluster",
            version=eks.KubernetesVersion.of(pins.minor),
            kubectl_provider_options=eks.KubectlProviderOptions(
                kubectl_layer=pins.kubectl_layer_class()(cluster_stack, "KubectlLayer")
            ),
        )
        self.stack = AddonsStack(
            app,
            "Addons",
            config=self.config,
            cluster=cluster,
            oidc_provider=cluster.open_id_connect_provider,
            hyperpod_cluster_arn=HYPERPOD_ARN,
            env=env,
        )
        assembly = app.synth()
        self.template_path = Path(assembly.get_stack_by_name("Addons").template_full_path)
        self.template = Template.from_stack(self.stack)
        self.json = self.template.to_json()
        self.resources: dict[str, dict[str, Any]] = self.json["Resources"]

    def logical_id(self, construct: Any) -> str:
        return self.stack.get_logical_id(construct.node.default_child or construct)

    def addon(self, name: str) -> tuple[str, dict[str, Any]]:
        found = [
            (lid, r)
            for lid, r in self.resources.items()
            if r["Type"] == "AWS::EKS::Addon" and r["Properties"]["AddonName"] == name
        ]
        assert len(found) == 1, f"expected one {name} add-on, found {len(found)}"
        return found[0]

    def role_of(self, role_arn: Any) -> dict[str, Any]:
        assert isinstance(role_arn, dict) and "Fn::GetAtt" in role_arn, role_arn
        return self.resources[role_arn["Fn::GetAtt"][0]]

    def policy_statements(self, role_logical_id: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for r in self.resources.values():
            if (
                r["Type"] == "AWS::IAM::Policy"
                and {"Ref": role_logical_id} in r["Properties"]["Roles"]
            ):
                out.extend(r["Properties"]["PolicyDocument"]["Statement"])
        return out


def render(value: Any) -> str:
    """Render an Fn::Join of literal strings and tokens, putting ISSUER for any intrinsic."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return sep.join(render(p) for p in parts)
    return ISSUER


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    return Synth(tmp_path_factory.mktemp("cdk.out"))


def trust_conditions(synth: Synth, role: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The web-identity statement's conditions with CfnJson values rendered as JSON."""
    statements = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    web = [s for s in statements if s["Action"] == "sts:AssumeRoleWithWebIdentity"]
    assert len(web) == 1
    out: dict[str, dict[str, str]] = {}
    for operator, ref in web[0]["Condition"].items():
        custom = synth.resources[ref["Fn::GetAtt"][0]]
        assert custom["Type"] == "Custom::AWSCDKCfnJson"
        out[operator] = json.loads(render(custom["Properties"]["Value"]))
    return out


EXPECTED_ADDONS = {
    "cert-manager": "v1.18.2-eksbuild.2",
    "aws-mountpoint-s3-csi-driver": "v2.7.0-eksbuild.1",
    "aws-fsx-csi-driver": "v1.8.0-eksbuild.1",
    "metrics-server": "v0.8.0-eksbuild.6",
    "aws-ebs-csi-driver": "v1.54.0-eksbuild.1",
    "amazon-sagemaker-hyperpod-inference": "v1.3.0-eksbuild.1",
}


@pytest.mark.parametrize(("name", "version"), sorted(EXPECTED_ADDONS.items()))
def test_addon_name_version_and_conflicts(synth: Synth, name: str, version: str) -> None:
    _, addon = synth.addon(name)
    props = addon["Properties"]
    assert props["AddonVersion"] == version
    assert props["ResolveConflicts"] == "OVERWRITE"  # the app owns this cluster
    assert "Fn::ImportValue" in json.dumps(props["ClusterName"])  # crosses from the EKS stack
    assert "PodIdentityAssociations" not in props


def test_only_expected_addons(synth: Synth) -> None:
    names = {
        r["Properties"]["AddonName"]
        for r in synth.resources.values()
        if r["Type"] == "AWS::EKS::Addon"
    }
    assert names == set(EXPECTED_ADDONS)


@pytest.mark.parametrize(
    ("name", "account"),
    [("aws-mountpoint-s3-csi-driver", sa.S3_CSI), ("aws-ebs-csi-driver", sa.EBS_CSI_CONTROLLER)],
)
def test_irsa_addon_role_trust(synth: Synth, name: str, account: sa.ServiceAccount) -> None:
    _, addon = synth.addon(name)
    role = synth.role_of(addon["Properties"]["ServiceAccountRoleArn"])
    assert trust_conditions(synth, role) == {
        "StringEquals": {
            f"{ISSUER}:sub": f"system:serviceaccount:{account.namespace}:{account.name}",
            f"{ISSUER}:aud": "sts.amazonaws.com",
        }
    }


def test_s3_csi_role_reads_only_model_buckets(synth: Synth) -> None:
    _, addon = synth.addon("aws-mountpoint-s3-csi-driver")
    role_id = addon["Properties"]["ServiceAccountRoleArn"]["Fn::GetAtt"][0]
    statements = synth.policy_statements(role_id)
    actions = {
        a
        for s in statements
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert actions == {"s3:ListBucket", "s3:GetObject"}
    resources = json.dumps([s["Resource"] for s in statements])
    assert f":s3:::{MODEL_BUCKET}" in resources and f":s3:::{MODEL_BUCKET}/*" in resources
    assert '"*"' not in resources


def test_ebs_csi_policy_has_hyperpod_attach_and_describe(synth: Synth) -> None:
    _, addon = synth.addon("aws-ebs-csi-driver")
    role_id = addon["Properties"]["ServiceAccountRoleArn"]["Fn::GetAtt"][0]
    role = synth.resources[role_id]
    managed = json.dumps(role["Properties"]["ManagedPolicyArns"])
    assert "policy/service-role/AmazonEBSCSIDriverPolicy" in managed
    by_sid = {s.get("Sid"): s for s in synth.policy_statements(role_id)}
    attach = by_sid["HyperPodNodeVolumes"]
    assert sorted(attach["Action"]) == [
        "sagemaker:AttachClusterNodeVolume",
        "sagemaker:DetachClusterNodeVolume",
    ]
    assert attach["Resource"] == HYPERPOD_ARN
    describe = by_sid["DescribeEksCluster"]
    assert describe["Action"] == "eks:DescribeCluster"
    assert "Fn::ImportValue" in json.dumps(describe["Resource"])  # the EKS cluster's ARN


def test_fsx_uses_separate_pod_identity_association(synth: Synth) -> None:
    fsx_id, _ = synth.addon("aws-fsx-csi-driver")
    assocs = [
        (lid, r)
        for lid, r in synth.resources.items()
        if r["Type"] == "AWS::EKS::PodIdentityAssociation"
    ]
    assert len(assocs) == 1
    assoc_id, assoc = assocs[0]
    assert assoc["Properties"]["Namespace"] == sa.FSX_CSI_CONTROLLER.namespace
    assert assoc["Properties"]["ServiceAccount"] == sa.FSX_CSI_CONTROLLER.name
    role = synth.role_of(assoc["Properties"]["RoleArn"])
    trust = role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]
    assert trust["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(trust["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    assert synth.resources[fsx_id]["DependsOn"] == [assoc_id]


def test_cert_manager_tolerates_hyperpod_health_check_taint(synth: Synth) -> None:
    _, addon = synth.addon("cert-manager")
    values = json.loads(addon["Properties"]["ConfigurationValues"])
    taint = {
        "key": "sagemaker.amazonaws.com/node-health-status",
        "operator": "Equal",
        "value": "Unschedulable",
        "effect": "NoSchedule",
    }
    assert values["tolerations"] == [taint]
    assert values["webhook"]["tolerations"] == [taint]
    assert values["cainjector"]["tolerations"] == [taint]


@pytest.fixture(scope="module")
def inference_values(synth: Synth) -> dict[str, Any]:
    _, addon = synth.addon("amazon-sagemaker-hyperpod-inference")
    raw = addon["Properties"]["ConfigurationValues"]
    # Tokens become Fn::GetAtt/Ref inside an Fn::Join: render them as placeholders, then parse.
    return dict(json.loads(render(raw)))


def test_inference_configuration_has_every_key(
    synth: Synth, inference_values: dict[str, Any]
) -> None:
    assert set(inference_values) == {
        "executionRoleArn",
        "tlsCertificateS3Bucket",
        "hyperpodClusterArn",
        "jumpstartGatedModelDownloadRoleArn",
        "alb",
        "keda",
    }
    assert inference_values["hyperpodClusterArn"] == HYPERPOD_ARN
    assert inference_values["alb"]["enabled"] is True
    assert inference_values["alb"]["serviceAccount"]["create"] is True
    assert inference_values["alb"]["serviceAccount"]["roleArn"] == ISSUER  # a role ARN token
    assert inference_values["keda"]["auth"]["aws"]["irsa"]["roleArn"] == ISSUER


def test_inference_configuration_points_at_the_right_resources(synth: Synth) -> None:
    _, addon = synth.addon("amazon-sagemaker-hyperpod-inference")
    parts = addon["Properties"]["ConfigurationValues"]["Fn::Join"][1]
    tokens = [p for p in parts if not isinstance(p, str)]
    literal = "".join(p for p in parts if isinstance(p, str))
    targets = [
        synth.resources[t["Fn::GetAtt"][0] if "Fn::GetAtt" in t else t["Ref"]]["Type"]
        for t in tokens
    ]
    # execution role, TLS bucket (Ref), gated role, ALB role, KEDA role - in key order
    assert targets == ["AWS::IAM::Role", "AWS::S3::Bucket"] + ["AWS::IAM::Role"] * 3
    assert literal.index("executionRoleArn") < literal.index("tlsCertificateS3Bucket")


def execution_role(synth: Synth) -> tuple[str, dict[str, Any]]:
    found = [
        (lid, r)
        for lid, r in synth.resources.items()
        if r["Type"] == "AWS::IAM::Role"
        and str(r["Properties"].get("RoleName", "")).startswith("SageMakerHyperPodInference")
    ]
    assert len(found) == 1
    return found[0]


def test_execution_role_name_and_trust(synth: Synth) -> None:
    role_id, role = execution_role(synth)
    name = role["Properties"]["RoleName"]
    assert name == "SageMakerHyperPodInference-hyperpod-kvcache-test-us-west-2"
    assert len(name) <= 64
    statements = role["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert {
        "Effect": "Allow",
        "Action": "sts:AssumeRole",
        "Principal": {"Service": "sagemaker.amazonaws.com"},
    } in statements
    assert trust_conditions(synth, role) == {
        "StringEquals": {
            f"{ISSUER}:sub": "system:serviceaccount:hyperpod-inference-system:"
            "hyperpod-inference-controller-manager",
            f"{ISSUER}:aud": "sts.amazonaws.com",
        }
    }
    managed = json.dumps(role["Properties"]["ManagedPolicyArns"])
    assert "policy/AmazonSageMakerHyperPodInferenceAccess" in managed
    tls = {s.get("Sid"): s for s in synth.policy_statements(role_id)}["TlsCertificateObjects"]
    assert "s3:PutObjectTagging" in tls["Action"]
    bucket_ref = tls["Resource"]["Fn::Join"][1][0]
    assert synth.resources[bucket_ref["Fn::GetAtt"][0]]["Type"] == "AWS::S3::Bucket"


def test_gated_model_role_trusts_the_endpoint_namespaces(synth: Synth) -> None:
    roles = [
        r
        for r in synth.resources.values()
        if r["Type"] == "AWS::IAM::Role"
        and "AmazonSageMakerHyperPodGatedModelAccess" in json.dumps(r["Properties"])
    ]
    assert len(roles) == 1
    assert trust_conditions(synth, roles[0]) == {
        "StringLike": {
            f"{ISSUER}:sub": [
                f"system:serviceaccount:{ns}:hyperpod-inference-service-account*"
                for ns in sorted({ep.namespace for ep in synth.config.kvcache.endpoints})
            ]
        },
        "StringEquals": {f"{ISSUER}:aud": "sts.amazonaws.com"},
    }


# The service accounts the inference add-on runs its ALB controller and KEDA as: the trust of
# the roles aws/sagemaker-hyperpod-cli's helm_to_addon.sh creates for the add-on (commit
# 9ffefae). KEDA's own chart would run as keda-operator in the namespace it is installed in
# (the inference Helm chart's keda.namespace: keda); the add-on runs it in its own namespace.
ADDON_SUBJECTS = {
    "alb": "system:serviceaccount:hyperpod-inference-system:aws-load-balancer-controller",
    "keda": "system:serviceaccount:hyperpod-inference-system:keda-operator",
}


@pytest.mark.parametrize("subject", ADDON_SUBJECTS.values(), ids=ADDON_SUBJECTS)
def test_alb_and_keda_role_trust(synth: Synth, subject: str) -> None:
    matching = [
        r
        for r in synth.resources.values()
        if r["Type"] == "AWS::IAM::Role"
        and "AssumeRoleWithWebIdentity" in json.dumps(r["Properties"])
        and trust_conditions(synth, r).get("StringEquals", {}).get(f"{ISSUER}:sub") == subject
    ]
    assert len(matching) == 1
    assert trust_conditions(synth, matching[0])["StringEquals"][f"{ISSUER}:aud"] == (
        "sts.amazonaws.com"
    )


def test_tls_bucket_is_locked_down_and_logged(synth: Synth) -> None:
    tls_bucket = synth.stack.platform.inference_operator.tls.bucket  # type: ignore[union-attr]
    bucket = synth.resources[synth.logical_id(tls_bucket)]
    props = bucket["Properties"]
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"][0][
        "ServerSideEncryptionByDefault"
    ] == {"SSEAlgorithm": "AES256"}
    assert props["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    logs_id = props["LoggingConfiguration"]["DestinationBucketName"]["Ref"]
    assert synth.resources[logs_id]["Type"] == "AWS::S3::Bucket"
    assert bucket["DeletionPolicy"] == "Delete"  # retain_stateful_resources is false
    policies = [
        r["Properties"]["PolicyDocument"]["Statement"]
        for r in synth.resources.values()
        if r["Type"] == "AWS::S3::BucketPolicy"
        and r["Properties"]["Bucket"] == {"Ref": synth.logical_id(tls_bucket)}
    ]
    deny_http = [
        s
        for s in policies[0]
        if s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    ]
    assert deny_http
    assert any(r["Type"] == "Custom::S3AutoDeleteObjects" for r in synth.resources.values())


def test_stateful_logical_ids_are_pinned(synth: Synth) -> None:
    """Renaming these constructs would replace (and empty) the buckets."""
    tls = synth.stack.platform.inference_operator.tls  # type: ignore[union-attr]
    assert synth.logical_id(tls.bucket) == "AddonsTlsCertificatesBucket18D62323"
    assert synth.logical_id(tls.access_logs) == "AddonsTlsCertificatesAccessLogsAE26BB50"


def test_dependency_edges(synth: Synth) -> None:
    ids = {name: synth.addon(name)[0] for name in EXPECTED_ADDONS}
    inference = synth.resources[ids["amazon-sagemaker-hyperpod-inference"]]
    assert set(inference.get("DependsOn", [])) >= {
        ids["cert-manager"],
        ids["aws-mountpoint-s3-csi-driver"],
        ids["aws-fsx-csi-driver"],
        ids["metrics-server"],
    }
    independent = set(ids.values()) - {ids["amazon-sagemaker-hyperpod-inference"]}
    for name, lid in ids.items():
        if name == "amazon-sagemaker-hyperpod-inference":
            continue
        depends = set(synth.resources[lid].get("DependsOn", []))
        assert not depends & independent, f"{name} is chained to another add-on"
        assert ids["amazon-sagemaker-hyperpod-inference"] not in depends


def test_cfn_lint_has_no_errors(synth: Synth) -> None:
    matches = lint_file(
        synth.template_path, ManualArgs(regions=["us-west-2"], ignore_checks=["W3005"])
    )
    errors = [m for m in matches if m.rule.id.startswith("E")]
    assert errors == [], "\n".join(str(m) for m in errors)


def test_without_a_metrics_workspace_keda_may_query_no_prometheus(synth: Synth) -> None:
    """Observability off: there is no workspace of this environment to scale on, so KEDA's role
    gets no ``aps:`` action at all (CloudWatch reads only)."""
    keda = synth.stack.platform.inference_operator.keda_role  # type: ignore[union-attr]
    statements = synth.policy_statements(synth.logical_id(keda))
    actions = {
        a
        for s in statements
        for a in ([s["Action"]] if isinstance(s["Action"], str) else s["Action"])
    }
    assert actions and not any(a.startswith("aps:") for a in actions)
