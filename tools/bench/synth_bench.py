"""Synth benchmark: the full app and `make synth` against a bare aws-cdk-lib app with one VPC.

Each run times, one after the other and each as fresh processes (no CLI): the bare app; the full
app (``python app.py``); and what `make synth` runs (the full app writing the manifests too, then
cfn-lint over every template). Wall time and peak resident memory are printed with their ratios
to the bare app. Target: `make synth` within 2x of the bare app. All three keep CDK's
built-in template validation on (its default); in the bare app it is most of the time.

Usage: python -m tools.bench.synth_bench [--env dev] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

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
    results: dict[str, list[tuple[float, float]]] = {"bare": [], "full": [], "make": []}
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
            results["make"].append(_measure_isolated(_make_synth(args.env, out / "make")))
    wall = {name: statistics.median(w for w, _ in runs) for name, runs in results.items()}
    mem = {name: max(m for _, m in runs) for name, runs in results.items()}
    labels = {"bare": "bare (1 VPC)", "full": f"app.py (env={args.env})",
              "make": "make synth (+ cfn-lint)"}  # fmt: skip
    print(f"runs per app: {args.runs} (median wall time, max peak RSS)")
    print(f"{'':<26}{'wall s':>8}{'peak MiB':>10}{'wall/bare':>11}{'mem/bare':>10}")
    for name, label in labels.items():
        print(f"{label:<26}{wall[name]:>8.2f}{mem[name]:>10.0f}"
              f"{wall[name] / wall['bare']:>10.2f}x{mem[name] / mem['bare']:>9.2f}x")  # fmt: skip
    ratio = wall["make"] / wall["bare"]
    verdict = "met" if ratio <= 2 else "not met"
    print(f"target: make synth within 2x of the bare app: {ratio:.2f}x, {verdict}")
    return 0


def _make_synth(env: str, out: Path) -> list[str]:
    """What `make synth` runs after installing: the synth with the manifests, with cfn-lint
    loading beside it, then cfn-lint."""
    synth = [sys.executable, "app.py", "-c", f"env={env}", "-c", f"manifestsDir={out / 'dist'}",
             "--outdir", str(out)]  # fmt: skip
    return [sys.executable, "-m", "tools.validate_templates", str(out), "--after", *synth]


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
