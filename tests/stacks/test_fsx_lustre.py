"""The FSx for Lustre L2 in the synthesized templates: cfn-lint clean, the file system's
settings, its security group admitting Lustre only from the nodes and itself, the S3 link, the
retention per environment, and the PV built from the file system's attributes. Two extra synths
(created cluster with the S3 link; existing cluster that retains state). Real CDK, no double."""

from __future__ import annotations

import json
from typing import Any

import pytest

from infra.cdk.validation import templates_in
from infra.config import parse_config
from infra.environment.fsx import DNS_OUTPUT, ID_OUTPUT, MOUNT_OUTPUT
from tests.support import background
from tests.support.config import (
    EXISTING_GROUPS,
    env_raw,
    existing_cluster,
    fsx_config,
    use_existing_cluster,
)
from tests.support.synth import Synth, synth_once

EXISTING_FSX = {
    "hyperpod_subnet_id": "subnet-0aaaa1111bbbb2222",
    "vpc_id": "vpc-0aaaa1111bbbb2222",
    "client_security_group_id": "sg-0eeee5555ffff6666",
}


@pytest.fixture(scope="session")
def created(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    result = synth_once("fsx-created", fsx_config(), tmp_path_factory)
    background.lint_soon(result.outdir, result.config.region)
    return result


@pytest.fixture(scope="session")
def existing_fsx(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    raw = env_raw()
    raw["retain_stateful_resources"] = True
    raw["hyperpod"] = EXISTING_GROUPS
    raw["kvcache"] = {
        **raw["kvcache"],
        "l2_backend": "fsx_lustre",
        "l2_backend_switch_confirmed": True,
        "fsx": EXISTING_FSX,
    }
    use_existing_cluster(raw, existing_cluster())
    config = parse_config(raw, "config/dev.yaml (existing fsx variant)", "dev")
    result = synth_once("fsx-existing", config, tmp_path_factory, chart_dir=None)
    background.lint_soon(result.outdir, result.config.region)
    return result


OWNED = "Custom::HyperPodOwnedManifest"


def _one(s: Synth, type_: str) -> dict[str, Any]:
    (res,) = s.resources(_stack_of(s, "AWS::FSx::FileSystem"), type_).values()
    return res


@pytest.mark.background
@pytest.mark.parametrize("fixture", ["created", "existing_fsx"])
def test_templates_pass_cfn_lint(fixture: str, request: pytest.FixtureRequest) -> None:
    s: Synth = request.getfixturevalue(fixture)
    for template in templates_in(s.outdir):
        errors = background.lint_errors(template, s.config.region)
        assert not errors, f"{template.name}: {errors}"


def test_file_system_settings(created: Synth) -> None:
    fs = _one(created, "AWS::FSx::FileSystem")
    props = fs["Properties"]
    assert props["FileSystemType"] == "LUSTRE" and props["StorageType"] == "SSD"
    assert props["StorageCapacity"] == 1200 and props["FileSystemTypeVersion"] == "2.15"
    assert props["LustreConfiguration"] == {
        "DeploymentType": "PERSISTENT_2",
        "PerUnitStorageThroughput": 250,
        "DataCompressionType": "NONE",
        "AutomaticBackupRetentionDays": 0,
    }
    (key_id,) = created.resources("kvcache", "AWS::KMS::Key")
    assert props["KmsKeyId"] == {"Ref": key_id}
    # The HyperPod subnet the network stack creates (AZ id network.hyperpod_subnet.az_id).
    (subnet,) = props["SubnetIds"]
    assert "NetworkHyperPodSubnet" in json.dumps(subnet)
    assert fs["DeletionPolicy"] == "Delete"


def test_security_group_admits_lustre_only_from_nodes_and_itself(created: Synth) -> None:
    rules = created.resources("kvcache", "AWS::EC2::SecurityGroupIngress").values()
    (sg_id,) = created.resources("kvcache", "AWS::EC2::SecurityGroup")
    into_fsx = [
        r["Properties"]
        for r in rules
        if r["Properties"]["GroupId"] == {"Fn::GetAtt": [sg_id, "GroupId"]}
    ]
    ports = {(p["FromPort"], p["ToPort"]) for p in into_fsx}
    assert ports == {(988, 988), (1018, 1023)}
    for p in into_fsx:
        assert p["IpProtocol"] == "tcp" and "CidrIp" not in p
        source = json.dumps(p["SourceSecurityGroupId"])
        assert sg_id in source or "NetworkClusterSecurityGroup" in source, p


def test_s3_link_exports_new_files(created: Synth) -> None:
    dra = _one(created, "AWS::FSx::DataRepositoryAssociation")["Properties"]
    assert dra["DataRepositoryPath"] == "s3://amzn-s3-demo-kv-archive/l2cache/"
    assert dra["S3"] == {"AutoExportPolicy": {"Events": ["NEW"]}}
    assert dra["FileSystemPath"] == "/" and dra["BatchImportMetaDataOnCreate"] is True


def _stack_of(s: Synth, type_: str) -> str:
    (suffix,) = [x for x in ("hyperpod", "kvcache") if s.resources(x, type_)]
    return suffix


@pytest.mark.parametrize("fixture", ["created", "existing_fsx"])
def test_a_replaced_file_system_reaches_the_pv_without_an_export(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """A new subnet, security group or KMS key replaces the file system: its Ref, DNSName and
    LustreMountName change. CloudFormation refuses to update an export that another stack
    imports ("Cannot update export ... as it is in use"), so the file system must live in the
    stack whose manifests read those values, and none of them may be exported."""
    s: Synth = request.getfixturevalue(fixture)
    fs_stack = _stack_of(s, "AWS::FSx::FileSystem")
    (fs_id,) = s.resources(fs_stack, "AWS::FSx::FileSystem")
    volume = [
        r
        for k, r in s.resources(fs_stack, "Custom::AWSCDK-EKS-KubernetesResource").items()
        if "40l2volume" in k
    ] or [r for k, r in s.resources(fs_stack, OWNED).items() if "40l2volume" in k]
    assert volume, f"the L2 volume manifest is not in the {fs_stack} stack, beside the file system"
    for path in s.outdir.glob("*.template.json"):
        for name, output in json.loads(path.read_text()).get("Outputs", {}).items():
            if "Export" in output:
                assert fs_id not in json.dumps(output["Value"]), (path.name, name)


@pytest.mark.parametrize("fixture", ["created", "existing_fsx"])
def test_the_stack_reports_the_file_system_where_make_manifests_reads_it(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    """`make manifests` finds the file system by these output keys (infra/environment/fsx.py)."""
    s: Synth = request.getfixturevalue(fixture)
    (fs,) = s.resources("kvcache", "AWS::FSx::FileSystem")
    outputs = s.template_json("kvcache")["Outputs"]
    assert outputs[ID_OUTPUT]["Value"] == {"Ref": fs}
    assert outputs[DNS_OUTPUT]["Value"] == {"Fn::GetAtt": [fs, "DNSName"]}
    assert outputs[MOUNT_OUTPUT]["Value"] == {"Fn::GetAtt": [fs, "LustreMountName"]}


def test_pv_takes_the_file_system_attributes(created: Synth) -> None:
    manifests = [
        r
        for k, r in created.resources("kvcache", "Custom::AWSCDK-EKS-KubernetesResource").items()
        if "40l2volume" in k
    ]
    (m,) = manifests
    text = json.dumps(m["Properties"]["Manifest"])
    for attr in ("DNSName", "LustreMountName", "L2FileSystem"):
        assert attr in text


def test_existing_cluster_uses_configured_ids_and_retains(existing_fsx: Synth) -> None:
    existing = existing_fsx
    fs = _one(existing, "AWS::FSx::FileSystem")
    assert fs["Properties"]["SubnetIds"] == [EXISTING_FSX["hyperpod_subnet_id"]]
    assert fs["DeletionPolicy"] == "Retain" and fs["UpdateReplacePolicy"] == "Retain"
    lustre = fs["Properties"]["LustreConfiguration"]
    assert lustre["AutomaticBackupRetentionDays"] == 7 and lustre["CopyTagsToBackups"] is True
    sources = {
        json.dumps(r["Properties"].get("SourceSecurityGroupId"))
        for r in existing.resources("kvcache", "AWS::EC2::SecurityGroupIngress").values()
    }
    assert json.dumps(EXISTING_FSX["client_security_group_id"]) in sources
    assert not existing.resources("kvcache", "AWS::FSx::DataRepositoryAssociation")


def test_the_default_environment_has_no_file_system(dev: Synth) -> None:
    for suffix in ("hyperpod", "kvcache"):
        assert not dev.resources(suffix, "AWS::FSx::FileSystem")
