"""The CDK CLI's synth and `python app.py`'s, side by side, in a process of their own.

Both synths take about 20 s of CPU; started when the session starts (tests/conftest.py), they run
beside the other tests, and the test that compares them (tests/test_cdk_cli.py) reads the answer
from ``<workdir>/result.json`` at the end. Under pytest-xdist every worker asks to start them:
the first to create the work directory does, the others find it there. Run alone, the test starts
them itself and waits. This module imports nothing heavy: ``python -m tests.support.cdk_cli DIR``
is the process that runs them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CDK = ROOT / "node_modules" / ".bin" / "cdk"
PYTHON = ROOT / ".venv" / "bin" / "python"
RESULT = "result.json"


def no_credentials_env(home: Path) -> dict[str, str]:
    """An environment without AWS credentials, config or instance metadata: any context lookup
    (e.g. availability zones) fails the synth."""
    home.mkdir(exist_ok=True)
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": str(home / "no-such-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "no-such-credentials"),
        "CDK_DISABLE_CLI_TELEMETRY": "true",
        "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "20",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def synth_both(workdir: Path) -> dict[str, Any]:
    """Run the CLI synth (into ``cli/``) and the direct synth (into ``direct/``) at once."""
    env = no_credentials_env(workdir / "home")
    cli_out, direct_out = workdir / "cli", workdir / "direct"
    python = str(PYTHON) if PYTHON.exists() else sys.executable
    # cdk.json's "app" runs .venv/bin/python: no activated virtualenv is needed.
    cli = subprocess.Popen(
        [str(CDK), "synth", "-c", "env=dev", "--output", str(cli_out), "--quiet", "--no-notices"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    direct = subprocess.run(
        [python, "app.py", "-c", "env=dev", "--outdir", str(direct_out)],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    cli_stdout, cli_stderr = cli.communicate(timeout=600)
    return {
        "cli": (cli.returncode, cli_stdout + cli_stderr),
        "direct": (direct.returncode, direct.stderr),
    }


def start(workdir: Path) -> None:
    """Start both synths in their own process, unless a process asked for them already."""
    try:
        workdir.mkdir(parents=True)
    except FileExistsError:
        return
    subprocess.Popen(
        [sys.executable, "-m", "tests.support.cdk_cli", str(workdir)],
        cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=(workdir / "runner.log").open("w"), start_new_session=True,
    )  # fmt: skip


def result(workdir: Path, timeout: float = 900) -> dict[str, Any]:
    """What the synths returned: started earlier, or now."""
    start(workdir)
    path, deadline = workdir / RESULT, time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            log = (workdir / "runner.log").read_text(errors="replace")[-3000:]
            raise TimeoutError(f"no {path} after {timeout:.0f} s; the runner's log:\n{log}")
        time.sleep(0.2)
    answer: dict[str, Any] = json.loads(path.read_text())
    if "error" in answer:
        raise RuntimeError(f"the synths did not run: {answer['error']}")
    return answer


def main(workdir: Path) -> None:
    try:
        ran = synth_both(workdir)
    except Exception:  # the test reports it instead of waiting for a result that never comes
        ran = {"error": traceback.format_exc()}
    tmp = workdir / f"{RESULT}.tmp"
    tmp.write_text(json.dumps(ran))
    tmp.rename(workdir / RESULT)  # whole or absent: the reader polls for the name


if __name__ == "__main__":
    main(Path(sys.argv[1]))
