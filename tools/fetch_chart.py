"""`make chart`: check out the pinned HyperPod dependencies chart into .charts/<commit>/.

Needs git, helm and network access (a workstation or CI runner, not synth). Re-runnable: a
complete checkout is kept; a partial one is started again.

Usage: python -m tools.fetch_chart [--env dev]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from infra.config import ConfigError, load_config
from stacks.composition import REPO_ROOT

MARKER = ".complete"


def fetch(repository: str, commit: str, chart_path: str, root: Path) -> Path:
    checkout = root / commit
    chart = checkout / chart_path
    if (checkout / MARKER).is_file():
        return chart
    shutil.rmtree(checkout, ignore_errors=True)
    checkout.mkdir(parents=True)
    git = ["git", "-C", str(checkout)]
    subprocess.run([*git, "init", "--quiet"], check=True)
    subprocess.run([*git, "fetch", "--quiet", "--depth", "1", repository, commit], check=True)
    subprocess.run([*git, "checkout", "--quiet", "FETCH_HEAD"], check=True)
    # Subcharts from remote repositories are vendored into charts/ so the asset is complete.
    subprocess.run(["helm", "dependency", "build", str(chart)], check=True)
    (checkout / MARKER).write_text(commit + "\n")
    return chart


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="dev")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.env)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if config.existing_cluster is not None:
        print("existing-cluster mode: the dependencies chart is already on the cluster; skipped")
        return 0
    for tool in ("git", "helm"):
        if shutil.which(tool) is None:
            print(
                f"error: {tool} not found on PATH; install it to fetch the chart", file=sys.stderr
            )
            return 1
    chart = config.hyperpod.dependencies_chart
    try:
        path = fetch(chart.repository, chart.commit, chart.path, REPO_ROOT / ".charts")
    except subprocess.CalledProcessError as error:
        print(f"error: {' '.join(error.cmd)} failed (exit {error.returncode})", file=sys.stderr)
        return 1
    print(f"chart ready: {path.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
