"""The CDK CLI's synth and `python app.py`'s, side by side, in a process of their own.

Both synths take about 20 s of CPU; started when the session starts (tests/conftest.py,
tests/support/early.py), they run beside the other tests, and the test that compares them
(tests/test_cdk_cli.py) reads the answer at the end. This module imports nothing heavy:
``python -m tests.support.cdk_cli DIR`` is the process that runs them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.support import early

ROOT = early.ROOT
CDK = ROOT / "node_modules" / ".bin" / "cdk"
PYTHON = ROOT / ".venv" / "bin" / "python"
FOLDER = "cdk-cli"  # in the run's temporary folder


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
    }


def synth_both(workdir: Path) -> dict[str, Any]:
    """Run the CLI synth (into ``cli/``) and the direct synth (into ``direct/``) at once."""
    env = no_credentials_env(workdir / "home")
    cli_out, direct_out = workdir / "cli", workdir / "direct"
    python = str(PYTHON) if PYTHON.exists() else sys.executable
    # cdk.json's "app" runs .venv/bin/python: no activated virtualenv is needed.
    cli = subprocess.Popen(
        [str(CDK), "synth", "-c", "env=dev", "--output", str(cli_out), "--quiet", "--no-notices"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    direct = subprocess.run(
        [python, "app.py", "-c", "env=dev", "--outdir", str(direct_out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    cli_stdout, cli_stderr = cli.communicate(timeout=600)
    return {
        "cli": (cli.returncode, cli_stdout + cli_stderr),
        "direct": (direct.returncode, direct.stderr),
    }


def start(run: Path) -> None:
    """Both synths, into ``run``'s folder for them (nothing without the CDK CLI: its test skips)."""
    if CDK.exists():
        early.start(__name__, run / FOLDER)


def result(run: Path, timeout: float = 900) -> dict[str, Any]:
    """What the synths returned (in ``run / FOLDER``): started earlier, or now."""
    return early.result(__name__, run / FOLDER, timeout=timeout)


if __name__ == "__main__":
    early.run(synth_both)
