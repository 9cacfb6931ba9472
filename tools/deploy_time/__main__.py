"""The deploy-time model, for maintainers (``make deploy-plan``, ``make deploy-durations``).

    python -m tools.deploy_time plan --out cdk.out [--png plan.png] [--json]
    python -m tools.deploy_time measured --env test [--cdk-out cdk.out] [--json]

``plan``: how long ``cdk deploy --all`` and ``cdk destroy --all`` take, modelled from the
synthesized templates (``make synth`` first) and durations.yaml: as deployed, the floor and the
critical path. ``measured``: the create and delete minutes of every resource of a deployed
environment (its CloudFormation events) beside the minutes durations.yaml assumes, to correct the
table after a real deploy. Exit 2 with one line on a missing assembly or a bad config.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from botocore.exceptions import ClientError

from infra.config import AppConfig, ConfigError, load_config
from scripts.lib.clients import Clients
from scripts.lib.environment import stack_names
from tools.deploy_time.model import DURATIONS_FILE, Durations, measured_rows, report


def plan(out: Path, png: Path | None, as_json: bool) -> int:
    if not (out / "manifest.json").is_file():
        print(f"error: no cloud assembly in {out}: run `make synth` first", file=sys.stderr)
        return 2
    figures = report(out, Durations.load(), png)
    if as_json:
        print(json.dumps(figures))
        return 0
    for verb in ("deploy", "destroy"):
        f = figures[verb]
        print(
            f"cdk {verb} --all: {f['as_deployed_minutes']} min as deployed, floor "
            f"{f['floor_minutes']} min, ratio {f['ratio']} (estimates: {DURATIONS_FILE.name})"
        )
        for item in f["critical_path"]:
            if item["end"] - item["start"] >= 1:  # the long steps of the path
                print(
                    f"  {item['start']:>6} -> {item['end']:>6}  {item['stack']}  "
                    f"{item['resource']} ({item['type']})"
                )
    if png:
        print(f"wrote {png}")
    return 0


def measured(cfg: AppConfig, cdk_out: Path, as_json: bool, cfn: Any) -> int:
    """``cfn``: a CloudFormation client of the environment's account and Region."""
    env = cfg.environment
    table = Durations.load()
    outdir = cdk_out if (cdk_out / "manifest.json").is_file() else None
    rows, missing = [], []
    for stack in stack_names(cfg):
        try:
            rows += measured_rows(cfn, [stack], table, outdir)
        except ClientError as exc:
            if "does not exist" not in exc.response["Error"].get("Message", ""):
                raise
            missing.append(stack)
    if as_json:
        print(
            json.dumps(
                {
                    "environment": env,
                    "durations_file": DURATIONS_FILE.name,
                    "cdk_out": str(outdir) if outdir else None,
                    "rows": [asdict(r) for r in rows],
                    "missing_stacks": missing,
                }
            )
        )
        return 0
    print(f"measured vs assumed minutes: {env} ({DURATIONS_FILE.name})")
    print("stack\tresource\ttype\tphase\tassumed\tmeasured\tratio")
    for r in rows:
        ratio = f"{r.measured / r.assumed:.2f}" if r.assumed else "-"
        print(
            f"{r.stack}\t{r.logical_id}\t{r.type}\t{r.phase}\t{r.assumed:.1f}\t"
            f"{r.measured:.1f}\t{ratio}"
        )
    for stack in missing:
        print(f"note: stack {stack} does not exist (not deployed, or deleted)")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="modelled deploy and destroy times of a cloud assembly")
    p.add_argument("--out", type=Path, default=Path("cdk.out"), help="the cloud assembly")
    p.add_argument("--png", type=Path, help="write a Gantt chart here")
    p.add_argument("--json", action="store_true", dest="as_json")
    m = sub.add_parser("measured", help="measured minutes of a deployed environment")
    m.add_argument("--env", required=True, help="reads config/<env>.yaml")
    m.add_argument(
        "--cdk-out",
        type=Path,
        default=Path("cdk.out"),
        help="its cloud assembly, for per-property overrides (when it holds one)",
    )
    m.add_argument("--json", action="store_true", dest="as_json")
    args = parser.parse_args(argv)
    if args.command == "plan":
        return plan(args.out, args.png, args.as_json)
    try:
        cfg = load_config(args.env)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return measured(cfg, args.cdk_out, args.as_json, Clients(cfg.region).aws("cloudformation"))


if __name__ == "__main__":
    sys.exit(main())
