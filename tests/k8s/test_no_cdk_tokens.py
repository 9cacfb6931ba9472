"""Nothing written for kubectl, GitOps or Grafana holds an unresolved CDK token.

A token (``${Token[TOKEN.123]}``) is a placeholder only ``cdk deploy`` fills in; in plain YAML the
API server takes it literally (a PersistentVolume whose volumeHandle is a token is accepted and
every Pod that mounts it hangs in ContainerCreating). Checked: the detector against the encodings
aws-cdk-lib itself produces (real tokens, no double); every writer refusing them; `make
manifests` for every shipped environment with Curvine and with FSx; `make synth`
(``python app.py -c manifestsDir=...``). The FSx file system's values come from the deployed
kvcache stack's outputs: CloudFormation is moto (it implements DescribeStacks with Outputs; the
stack is created from a template whose outputs are the literal values a deploy reports).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml
from aws_cdk import App, CfnResource, Fn, Stack, Token
from moto import mock_aws
from typer.testing import CliRunner

import app as app_module
from infra.cdk.unresolved import UnresolvedTokenError, unresolved_tokens
from infra.cdk.written import RECORD, OutputFolder, read_record
from infra.environment.fsx import (
    DNS_OUTPUT,
    ID_OUTPUT,
    MOUNT_OUTPUT,
    FileSystemUnknown,
    FsxVolume,
    deployed_file_system,
    kvcache_stack_name,
)
from k8s import render as render_module
from k8s.app import build_charts
from k8s.render import render_config, write
from scripts import cli
from scripts.commands import dashboard
from scripts.lib import runtime
from scripts.lib.errors import Exit
from tests.support.config import DEPLOYED_FSX, fsx_config

ENVS = ("dev", "test", "prod")


def _cdk_values() -> dict[str, Any]:
    """One value of each token encoding, from a real CloudFormation resource's attributes."""
    stack = Stack(App(), "S")
    fs = CfnResource(stack, "Fs", type="AWS::FSx::FileSystem")
    number = Token.as_number(fs.get_att("StorageCapacity"))
    return {
        "string": fs.get_att("DNSName").to_string(),
        "list": Token.as_list(fs.get_att("NetworkInterfaceIds")),
        "number": number,
        "number in a string": f"{number}Gi",
        "joined": Fn.join(".", [fs.ref, "fsx.amazonaws.com"]),
        "embedded": f"fs://{fs.ref}/l2",
    }


@pytest.mark.parametrize("kind", list(_cdk_values()))
def test_every_token_encoding_of_aws_cdk_is_found_in_yaml_and_json(kind: str) -> None:
    value = _cdk_values()[kind]
    if kind != "number in a string":  # is_unresolved needs the Token[ marker in a string
        assert Token.is_unresolved(value), kind
    for text in (yaml.safe_dump({"v": value}), json.dumps({"v": value}, indent=2)):
        assert unresolved_tokens(text), (kind, text)


@pytest.mark.parametrize(
    "text",
    [
        "volumeHandle: fs-0123456789abcdef0\n",
        "storage: 1200Gi\nhigh: 1095216660480\n",
        "value: -1.0e+289\nother: -1.88e+288\n",
        "command: echo ${HOME} Token[ #{x}\n",
    ],
)
def test_ordinary_values_are_not_tokens(text: str) -> None:
    assert unresolved_tokens(text) == []


def test_the_renderer_refuses_charts_built_with_cdk_values_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """The charts the kvcache stack deploys carry the file system as tokens: written as YAML
    they would be applied as they are."""
    v = _cdk_values()
    charts = build_charts(fsx_config(), fsx=FsxVolume(v["joined"], v["string"], v["string"]))
    out = tmp_path / "dist"
    out.mkdir()
    (out / "20-curvine.yaml").write_text("kind: Stale\n")
    with pytest.raises(UnresolvedTokenError) as caught:
        write(fsx_config(), charts, out, tmp_path / "locks")
    (line,) = str(caught.value).splitlines()
    assert "40-l2-volume.yaml" in line and "${Token[" in line
    assert [p.name for p in out.iterdir()] == ["20-curvine.yaml"]  # nothing removed or written
    assert not (tmp_path / "locks").exists()


def _written(out: Path) -> str:
    return "".join(p.read_text() for p in sorted(out.iterdir()))


@pytest.mark.parametrize("backend", ["curvine", "fsx_lustre"])
@pytest.mark.parametrize("env", ENVS)
def test_make_manifests_writes_no_token_for_any_environment_or_backend(
    env: str, backend: str, tmp_path: Path
) -> None:
    config = render_module.load_config(env) if backend == "curvine" else fsx_config(env)
    fsx = DEPLOYED_FSX if backend == "fsx_lustre" else None
    files = render_config(config, tmp_path / "dist", tmp_path / "locks", fsx=fsx)
    assert files and unresolved_tokens(_written(tmp_path / "dist")) == []
    volumes = [
        o
        for o in yaml.safe_load_all((tmp_path / "dist" / "40-l2-volume.yaml").read_text())
        if o and o["kind"] == "PersistentVolume"
    ]
    if backend == "fsx_lustre":
        assert volumes and {pv["spec"]["csi"]["volumeHandle"] for pv in volumes} == {
            DEPLOYED_FSX.file_system_id
        }


# --- the file system from the deployed stack's outputs ------------------------------------------


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Any:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with mock_aws():
        yield boto3.client("cloudformation", region_name=fsx_config().region)


def _deploy(cloudformation: Any, outputs: dict[str, str]) -> None:
    template = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {k: {"Value": v} for k, v in outputs.items()},
    }
    cloudformation.create_stack(
        StackName=kvcache_stack_name(fsx_config()), TemplateBody=json.dumps(template)
    )


DEPLOYED_OUTPUTS = {
    ID_OUTPUT: DEPLOYED_FSX.file_system_id,
    DNS_OUTPUT: DEPLOYED_FSX.dns_name,
    MOUNT_OUTPUT: DEPLOYED_FSX.mount_name,
}


def test_the_file_system_is_read_from_the_deployed_kvcache_stack(aws: Any) -> None:
    _deploy(aws, DEPLOYED_OUTPUTS)
    assert deployed_file_system(fsx_config(), aws) == DEPLOYED_FSX


@pytest.mark.parametrize(
    ("outputs", "reason"),
    [
        (None, "the stack does not exist"),
        ({}, f"the stack has no output {ID_OUTPUT}"),
        ({ID_OUTPUT: "fs-1"}, f"the stack has no output {DNS_OUTPUT}"),
    ],
)
def test_without_a_deployed_file_system_the_lookup_says_how_to_get_one(
    aws: Any, outputs: dict[str, str] | None, reason: str
) -> None:
    if outputs is not None:
        _deploy(aws, outputs)
    with pytest.raises(FileSystemUnknown) as caught:
        deployed_file_system(fsx_config(), aws)
    (line,) = str(caught.value).splitlines()
    assert line.startswith("kvcache.l2_backend = 'fsx_lustre'")
    assert reason in line and "`make deploy ENV=dev`" in line
    assert kvcache_stack_name(fsx_config()) in line


@pytest.fixture
def fsx_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`--env dev` loads dev's FSx variant; the lock goes to a temporary folder."""
    monkeypatch.setattr(runtime, "load_config", lambda env: fsx_config(env))
    monkeypatch.setattr(render_module, "LOCK_DIR", tmp_path / "locks")


@pytest.mark.usefixtures("fsx_env")
def test_make_manifests_for_fsx_writes_the_deployed_file_system(
    aws: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _deploy(aws, DEPLOYED_OUTPUTS)
    result = CliRunner().invoke(
        cli.app, ["manifests", "--env", "dev", "--out", str(tmp_path / "dist")]
    )
    assert result.exit_code == 0, result.output
    text = (tmp_path / "dist" / "40-l2-volume.yaml").read_text()
    assert f"volumeHandle: {DEPLOYED_FSX.file_system_id}" in text
    assert f"mountname: {DEPLOYED_FSX.mount_name}" in text
    assert unresolved_tokens(_written(tmp_path / "dist")) == []


@pytest.mark.usefixtures("fsx_env", "aws")
def test_make_manifests_for_fsx_before_a_deploy_is_one_line_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dist"
    result = CliRunner().invoke(cli.app, ["manifests", "--env", "dev", "--out", str(out)])
    assert result.exit_code == 2
    (line,) = result.stderr.splitlines()
    assert "the stack does not exist" in line and "make deploy ENV=dev" in line
    assert result.stdout == "" and not out.exists()


# --- make synth -----------------------------------------------------------------------------


def _synth(tmp_path: Path, out: Path) -> None:
    app_module.main(
        ["-c", "env=dev", "-c", f"manifestsDir={out}", "--outdir", str(tmp_path / "cdk.out")]
    )


def test_make_synth_writes_what_make_manifests_writes_and_keeps_the_dashboard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`make dashboard` then `make synth`: dist/<env>/ holds exactly what `make manifests`
    writes, and the dashboard's files stay."""
    monkeypatch.setattr(render_module, "LOCK_DIR", tmp_path / "locks")
    synth_out, manifests_out = tmp_path / "synth", tmp_path / "manifests"
    assert dashboard.run(dashboard.DashboardOptions(out=synth_out)) == Exit.OK
    rules = (synth_out / "alert-rules.yaml").read_text()
    _synth(tmp_path, synth_out)
    render_module.render("dev", manifests_out, tmp_path / "locks")
    assert (synth_out / "alert-rules.yaml").read_text() == rules
    # Beside the record of what was written there (the synth's also lists the dashboard's).
    synthesized = {p.name: p.read_text() for p in synth_out.iterdir() if p.name != RECORD}
    rendered = {p.name: p.read_text() for p in manifests_out.iterdir() if p.name != RECORD}
    assert {k: v for k, v in synthesized.items() if k in rendered} == rendered
    assert set(read_record(synth_out)) == set(synthesized)


def test_make_synth_with_fsx_writes_no_token_and_says_how_to_get_the_manifests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The synth is offline and the file system exists only after a deploy: dist/<env>/ is left
    as it is (a folder written by `make manifests` after the deploy stays valid)."""
    monkeypatch.setattr(app_module, "load_config", lambda env: fsx_config(env))
    monkeypatch.setattr(render_module, "LOCK_DIR", tmp_path / "locks")
    out = tmp_path / "dist"
    OutputFolder(out).write({"40-l2-volume.yaml": "written by make manifests after the deploy\n"})
    before = {p.name: p.read_text() for p in out.iterdir()}
    _synth(tmp_path, out)
    assert {p.name: p.read_text() for p in out.iterdir()} == before
    lines = [x for x in capsys.readouterr().err.splitlines() if str(out) in x]
    assert len(lines) == 1 and "make manifests ENV=dev" in lines[0], lines
