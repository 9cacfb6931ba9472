"""The CLI's first line of output is its own: jsii's Node.js end-of-life banner stays silent.

No double: a new ``python -m scripts`` process with nothing in its environment to silence it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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
