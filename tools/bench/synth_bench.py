"""Synth benchmark: the full app and `make synth` against a bare aws-cdk-lib app with one VPC.

Each run times, one after the other and each as fresh processes (no CLI): the bare app twice, with
aws-cdk-lib's built-in template validation on (its default) and off; the full app (``python
app.py``); and what `make synth` runs (the full app writing the manifests too, then cfn-lint over
every template). Every App of this project turns the built-in validation off
(``infra.cdk.context.new_app``: the pinned cfn-lint checks the templates instead), so the bare app
with it off is the like-for-like baseline; against the bare app with it on, the project's synth
looks faster than it is, because that validation is most of the bare app's time. Wall time and
peak resident memory are printed with their ratios to both.

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

# argv: the output folder, then "on" or "off" for aws-cdk-lib's built-in template validation.
BARE_APP = """
import sys
from aws_cdk import App, Environment, Stack
from aws_cdk import aws_ec2 as ec2
app = App(outdir=sys.argv[1], builtin_cloud_formation_validation=sys.argv[2] == "on")
stack = Stack(app, "Bare", env=Environment(account="111122223333", region="us-west-2"))
ec2.Vpc(stack, "Vpc", availability_zones=["us-west-2a", "us-west-2b"])
app.synth()
"""


# Row key -> label, in the order printed.
LABELS = {
    "bare_on": "bare app (1 VPC), CDK validation on",
    "bare_off": "bare app (1 VPC), CDK validation off",
    "full": "app.py (env={env}), CDK validation off",
    "make": "make synth (+ cfn-lint), CDK validation off",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="dev")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in LABELS}
    with tempfile.TemporaryDirectory() as tmp:
        bare_script = Path(tmp) / "bare_app.py"
        bare_script.write_text(BARE_APP)
        for run in range(args.runs):
            # Separate processes so each peak RSS is its own (children's maxrss is cumulative).
            out = Path(tmp) / f"run{run}"
            for validation in ("on", "off"):
                results[f"bare_{validation}"].append(
                    _measure_isolated(bare_app_command(bare_script, out / validation, validation))
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
    print("\n".join(report_lines(wall, mem, args.runs, args.env)))
    return 0


def bare_app_command(script: Path, out: Path, validation: str) -> list[str]:
    """The bare app, writing to ``out``, with the built-in validation ``on`` or ``off``."""
    return [sys.executable, str(script), str(out), validation]


def report_lines(wall: dict[str, float], mem: dict[str, float], runs: int, env: str) -> list[str]:
    """The table (wall time and peak memory, their ratios to the like-for-like bare app, and the
    wall-time ratio to the bare app with validation on) and one line with `make synth`'s two
    ratios, each saying which bare app it is against."""
    off, on = wall["bare_off"], wall["bare_on"]
    lines = [
        f"runs per app: {runs} (median wall time, max peak RSS)",
        f"{'':<44}{'wall s':>8}{'peak MiB':>10}{'wall/bare off':>15}{'mem/bare off':>14}"
        f"{'wall/bare on':>14}",
    ]
    for name, label in LABELS.items():
        lines.append(
            f"{label.format(env=env):<44}{wall[name]:>8.2f}{mem[name]:>10.0f}"
            f"{wall[name] / off:>14.2f}x{mem[name] / mem['bare_off']:>13.2f}x"
            f"{wall[name] / on:>13.2f}x"
        )
    lines.append(
        f"make synth: {wall['make'] / off:.2f}x the bare app with CDK's validation off (like for "
        f"like: this project turns it off), {wall['make'] / on:.2f}x the bare app with it on "
        "(aws-cdk-lib's default)"
    )
    return lines


def _make_synth(env: str, out: Path) -> list[str]:
    """What `make synth` runs after installing: the synth with the manifests, with cfn-lint
    loading beside it, then cfn-lint."""
    synth = [
        sys.executable,
        "app.py",
        "-c",
        f"env={env}",
        "-c",
        f"manifestsDir={out / 'dist'}",
        "--outdir",
        str(out),
    ]
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
