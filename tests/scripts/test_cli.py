"""Every command ends every failure with one line and its exit code, and with --json one JSON
object, in the environment of a new user: no AWS credentials, no kubeconfig, HOME empty.

Doubles: none for AWS: boto3 runs for real and finds no credentials (config and credential files
point nowhere, the instance metadata service is disabled), so no request leaves the machine. For
Kubernetes: the official client with no kubeconfig, and with a kubeconfig whose server is a closed
local port (connection refused)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from infra.config import load_config
from scripts import cli
from scripts.lib import runtime
from tests.support.config import env_raw

ROOT = Path(__file__).resolve().parents[2]
NO_CREDENTIALS = "no AWS credentials: run `aws configure`"


@pytest.fixture
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A new user's shell: nothing configured; returns the environment for a subprocess."""
    for key in list(os.environ):
        if key.startswith(("AWS_", "KUBERNETES_")) or key == "KUBECONFIG":
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    home.mkdir()
    settings = {
        "HOME": str(home),
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
        "AWS_EC2_METADATA_DISABLED": "true",
        "KUBECONFIG": str(tmp_path / "no-kubeconfig"),
    }
    for key, value in settings.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(runtime, "DEPLOY", lambda env: pytest.fail("recreate must not deploy"))
    return dict(os.environ)


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("error: "), stderr
    return lines[0]


COMMANDS = [
    (["verify", "--skip-l2-test"], "no Kubernetes access"),
    (["patch"], "no Kubernetes access"),
    (["teardown"], NO_CREDENTIALS),
    (["recreate", "--yes"], NO_CREDENTIALS),
    (["bench"], "no Kubernetes access"),
]


@pytest.mark.parametrize(("argv", "says"), COMMANDS, ids=[c[0][0] for c in COMMANDS])
def test_each_command_fails_in_one_line(
    clean_env: dict[str, str], argv: list[str], says: str
) -> None:
    result = CliRunner().invoke(cli.app, [*argv, "--env", "dev"])
    assert result.exit_code == 4, result.output
    assert "Traceback" not in result.output
    if argv[0] == "recreate":  # its phase lines come first; the error line still ends it
        lines = result.stderr.strip().splitlines()
        assert lines[-1].startswith("error: ") and says in lines[-1], result.stderr
        assert [line for line in lines if line.startswith("error: ")] == lines[-1:]
        assert "teardown failed (exit 4)" in lines[-2] and "teardown" in result.stdout
        return
    assert says in _one_line(result.stderr)
    assert result.stdout == ""


@pytest.mark.parametrize("command", ["verify", "patch", "teardown", "bench"])
def test_json_errors_are_one_json_object(clean_env: dict[str, str], command: str) -> None:
    result = CliRunner().invoke(cli.app, [command, "--env", "dev", "--json"])
    assert result.exit_code == 4, result.output
    data = json.loads(result.stdout)
    assert data["ok"] is False and data["exit_code"] == 4 and data["command"] == command
    assert data["error"] and "\n" not in data["error"]
    _one_line(result.stderr)


def test_preflight_without_credentials_fails_the_first_row_and_skips_the_rest(
    clean_env: dict[str, str],
) -> None:
    result = CliRunner().invoke(cli.app, ["preflight", "--env", "dev", "--json"])
    assert result.exit_code == 1, result.output
    checks = json.loads(result.stdout)["checks"]
    first, placeholder, *rest = checks
    assert (first["stage"], first["status"]) == ("credentials", "fail")
    assert NO_CREDENTIALS in first["detail"]
    # dev.yaml's weights bucket is a placeholder: refused from the config alone.
    assert (placeholder["stage"], placeholder["status"]) == ("model buckets: qwen3-8b", "fail")
    aws_rows = [c for c in rest if c["stage"] not in ("kubectl", "helm", "node")]
    assert aws_rows and all(c["status"] == "skip" and c["detail"] for c in aws_rows)


def test_an_unreachable_api_server_is_one_line(
    clean_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    # The client reads KUBECONFIG once, when it is imported.
    monkeypatch.setattr(
        "kubernetes.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig)
    )
    result = CliRunner().invoke(cli.app, ["patch", "--env", "dev", "--dry-run"])
    assert result.exit_code == 4, result.output
    assert f"cannot reach the Kubernetes API server at 127.0.0.1:{port}" in _one_line(result.stderr)


BAD_CONFIGS: dict[str, bytes] = {
    "binary": bytes(range(256)),
    "list": b"[1, 2]",
    "null": b"null",
    "string-number": json.dumps({"num_hidden_layers": "28", "hidden_size": 3584}).encode(),
    "huge-number": b'{"num_hidden_layers": ' + b"9" * 5000 + b"}",
    "big-number": json.dumps({"num_hidden_layers": 10**30, "hidden_size": 4096}).encode(),
    "text-config-list": b'{"text_config": [1]}',
    "bool": json.dumps({"num_hidden_layers": True}).encode(),
}


@pytest.mark.parametrize("kind", sorted(BAD_CONFIGS))
def test_size_rejects_bad_config_files_in_one_line(
    clean_env: dict[str, str], tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(BAD_CONFIGS[kind])
    for argv in (["size", str(path)], ["size", str(path), "--json"]):
        result = CliRunner().invoke(cli.app, argv)
        assert result.exit_code == 2, result.output
        assert str(path) in _one_line(result.stderr)
        if "--json" in argv:
            assert json.loads(result.stdout)["exit_code"] == 2


def test_no_traceback_reaches_the_terminal(clean_env: dict[str, str]) -> None:
    """The real entry point, in a subprocess: stdout is one JSON object, stderr one line."""
    proc = subprocess.run(
        [sys.executable, "-m", "scripts", "teardown", "--env", "dev", "--json"],
        cwd=ROOT,
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 4, proc.stderr
    assert json.loads(proc.stdout)["error"].startswith(NO_CREDENTIALS)
    assert NO_CREDENTIALS in _one_line(proc.stderr) and "Traceback" not in proc.stderr


BROKEN_KUBECONFIGS = {
    "not yaml": "clusters: [\n",
    "no current context": json.dumps({"apiVersion": "v1", "kind": "Config", "clusters": []}),
    "context naming nothing": json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "x",
            "contexts": [{"name": "x", "context": {"cluster": "gone", "user": "gone"}}],
        }
    ),
    "a list": "[1, 2]",
}


@pytest.mark.parametrize("kind", sorted(BROKEN_KUBECONFIGS))
@pytest.mark.parametrize("argv", [["patch", "--dry-run"], ["verify", "--skip-l2-test"]])
def test_a_broken_kubeconfig_is_one_line(
    clean_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    argv: list[str],
) -> None:
    """A hand-edited or truncated kubeconfig: the shared client builder says which file and why,
    in one line, for every Kubernetes command."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(BROKEN_KUBECONFIGS[kind])
    monkeypatch.setattr(
        "kubernetes.config.kube_config.KUBE_CONFIG_DEFAULT_LOCATION", str(kubeconfig)
    )
    result = CliRunner().invoke(cli.app, [*argv, "--env", "dev"])
    assert "Traceback" not in result.output
    assert result.exit_code in (2, 4), result.output
    assert "kubeconfig" in _one_line(result.stderr)


@pytest.mark.parametrize("argv", [["size", "qwen2-7b"], ["bench", "compare"], ["bench"]])
def test_an_environment_without_endpoints_is_one_line(
    clean_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    raw = env_raw()
    raw["kvcache"]["endpoints"] = []
    (tmp_path / "dev.yaml").write_text(yaml.safe_dump(raw))
    monkeypatch.setattr(runtime, "load_config", lambda env: load_config(env, tmp_path, tmp_path))
    result = CliRunner().invoke(cli.app, [*argv, "--env", "dev"])
    assert result.exit_code == 2, result.output
    assert "kvcache.endpoints = []" in _one_line(result.stderr)
