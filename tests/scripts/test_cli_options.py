"""Every numeric option of every command is checked when the command line is parsed: a value the
command cannot use (a negative interval, a hit ratio above 1, a length that is not a whole number)
ends in exit 2 and one line naming the option, the value, what is allowed and where to look,
before anything runs. A refused connection names the URL it tried.

No double: the typer app runs in this process (typer's CliRunner) with no AWS credentials and no
kubeconfig, so a value that got past the parser would reach AWS or Kubernetes and fail there
(exit 4) instead of exit 2; the connection test talks to a local port nothing listens on.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scripts import cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _new_user(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith(("AWS_", "KUBERNETES_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "no-kubeconfig"))


def _one_line(argv: list[str], code: int) -> str:
    result = CliRunner().invoke(cli.app, argv)
    assert result.exit_code == code, (result.exit_code, result.stderr, result.exception)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


# (command line, the option the line names, the value as given)
MISUSES: list[tuple[list[str], str, str]] = [
    (["wait-tiered-storage", "--interval-seconds", "-1"], "--interval-seconds", "-1"),
    (["wait-tiered-storage", "--interval-seconds", "0"], "--interval-seconds", "0"),
    (["wait-tiered-storage", "--timeout-minutes", "-5"], "--timeout-minutes", "-5"),
    (["verify", "--min-hit-ratio", "1.5"], "--min-hit-ratio", "1.5"),
    (["verify", "--min-hit-ratio", "-0.1"], "--min-hit-ratio", "-0.1"),
    (["verify", "--prompt-words", "0"], "--prompt-words", "0"),
    (["verify", "--max-tokens", "-4"], "--max-tokens", "-4"),
    (["verify", "--port", "70000"], "--port", "70000"),
    (["verify", "--wait-minutes", "-1"], "--wait-minutes", "-1"),
    (["patch", "--timeout-minutes", "0"], "--timeout-minutes", "0"),
    (["bench", "--repeats", "-1"], "--repeats", "-1"),
    (["bench", "--turns", "-2"], "--turns", "-2"),
    (["bench", "--turn-words", "0"], "--turn-words", "0"),
    (["bench", "--concurrency-words", "0"], "--concurrency-words", "0"),
    (["bench", "--max-tokens", "0"], "--max-tokens", "0"),
    (["bench", "--lengths", "500,1.5"], "--lengths", "500,1.5"),
    (["bench", "--lengths", "-500"], "--lengths", "-500"),
    (["bench", "--lengths", ""], "--lengths", "''"),
    (["bench", "--concurrency", "1,0"], "--concurrency", "1,0"),
    (["bench", "--target", "localhost:8000"], "--target", "localhost:8000"),
    (["size", "qwen2-7b", "--gpu-memory-utilization", "1.2"], "--gpu-memory-utilization", "1.2"),
    (["size", "qwen2-7b", "--gpu-memory-utilization", "0"], "--gpu-memory-utilization", "0"),
    (["size", "qwen2-7b", "--gpu-nodes", "0"], "--gpu-nodes", "0"),
    (["size", "qwen2-7b", "--params", "-7e9"], "--params", "-7e9"),
    (["size", "qwen2-7b", "--l2-worker-gib", "-1"], "--l2-worker-gib", "-1"),
    (["size", "qwen2-7b", "--prompt-tokens", "0"], "--prompt-tokens", "0"),
    (["size", "qwen2-7b", "--prefill-tokens-per-s", "0"], "--prefill-tokens-per-s", "0"),
    (["recreate", "--yes", "--wait-minutes", "-1"], "--wait-minutes", "-1"),
]


@pytest.mark.parametrize(
    ("argv", "option", "value"), MISUSES, ids=[" ".join(m[0]) for m in MISUSES]
)
def test_an_option_value_the_command_cannot_use_ends_in_one_line_before_it_runs(
    argv: list[str], option: str, value: str
) -> None:
    line = _one_line(argv, 2)
    assert option in line and value in line, line
    said, _, fix = line.partition("allowed: ")[2].partition("; fix: ")
    assert said and f"hpkv {argv[0]} --help" in fix, line


def test_the_json_form_of_a_refused_option_is_one_object(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli.app, ["bench", "--json", "--repeats", "0"])
    assert result.exit_code == 2
    assert result.stdout.count("\n") == 1 and '"exit_code": 2' in result.stdout
    assert "--repeats" in result.stdout


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("model", [[], ["--model", "m"]], ids=["models list", "completion"])
def test_a_refused_connection_names_the_url_it_tried(model: list[str], tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    argv = ["bench", "--target", url, "--lengths", "10", "--repeats", "1", "--turns", "0"]
    line = _one_line([*argv, *model, "--out", str(tmp_path)], 4)
    assert url in line and "refused" in line.lower(), line


def test_the_cli_prints_no_node_js_banner_before_its_output(tmp_path: Path) -> None:
    """A new process with nothing in its environment to silence jsii's Node.js end-of-life
    banner; `manifests` loads cdk8s (and so starts Node.js)."""
    env = {
        k: v for k, v in os.environ.items() if k != "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"
    }
    out = tmp_path / "dist"
    proc = subprocess.run(
        [sys.executable, "-m", "scripts", "manifests", "--env", "dev", "--out", str(out)],
        cwd=ROOT,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "end-of-life" not in proc.stderr and "!!!" not in proc.stderr, proc.stderr
    assert proc.stdout.splitlines()[0].startswith(str(out)), proc.stdout
