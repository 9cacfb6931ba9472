"""Synth benchmark: the full app against a bare aws-cdk-lib app with one VPC.

Both are synthesized the same way (a fresh Python process running ``app.py``-style code, no CLI),
one after the other, and the wall time and peak resident memory of each process are printed with
their ratio. Target: the full app within 2x of the bare app.

Usage: python -m bench.synth_bench [--env dev] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]

BARE_APP = """
import sys
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_ec2 as ec2
app = App(outdir=sys.argv[1])
stack = Stack(app, "Bare", env=Environment(account="111122223333", region="us-west-2"))
ec2.Vpc(stack, "Vpc", availability_zones=["us-west-2a", "us-west-2b"])
app.synth()
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="dev")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    results: dict[str, list[tuple[float, float]]] = {"bare": [], "full": []}
    with tempfile.TemporaryDirectory() as tmp:
        bare_script = Path(tmp) / "bare_app.py"
        bare_script.write_text(BARE_APP)
        for run in range(args.runs):
            # Separate processes so each peak RSS is its own (children's maxrss is cumulative).
            out = Path(tmp) / f"run{run}"
            results["bare"].append(
                _measure_isolated([sys.executable, str(bare_script), str(out / "bare")])
            )
            results["full"].append(
                _measure_isolated(
                    [
                        sys.executable,
                        "app.py",
                        "-c",
                        f"env={args.env}",
                        "--outdir",
                        str(out / "full"),
                    ]
                )
            )
    bare_wall = statistics.median(w for w, _ in results["bare"])
    full_wall = statistics.median(w for w, _ in results["full"])
    bare_mem = max(m for _, m in results["bare"])
    full_mem = max(m for _, m in results["full"])
    print(f"runs per app: {args.runs} (median wall time, max peak RSS)")
    print(f"{'app':<28}{'wall s':>10}{'peak MiB':>12}")
    print(f"{'bare (1 VPC)':<28}{bare_wall:>10.2f}{bare_mem:>12.0f}")
    print(f"{'full (env=' + args.env + ')':<28}{full_wall:>10.2f}{full_mem:>12.0f}")
    print(f"{'ratio full/bare':<28}{full_wall / bare_wall:>10.2f}{full_mem / bare_mem:>12.2f}")
    print("target: full app within 2x of the bare app")
    return 0


def _measure_isolated(command: list[str]) -> tuple[float, float]:
    """Run ``command`` under a fresh ``python -c`` parent so RUSAGE_CHILDREN covers it alone."""
    probe = (
        "import resource, subprocess, sys, time\n"
        "t = time.perf_counter()\n"
        "subprocess.run(sys.argv[1:], check=True, capture_output=True)\n"
        "w = time.perf_counter() - t\n"
        "print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe, *command],
        cwd=REPO_ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), float(out[1])


if __name__ == "__main__":
    sys.exit(main())
