"""``hpkv durations``: measured create/delete minutes of every resource (CloudFormation events of
the deployed stacks) beside the minutes scripts/lib/deploy_durations.yaml assumes."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from botocore.exceptions import ClientError
from rich.table import Table

from scripts.lib import runtime
from scripts.lib.deploy_plan import DURATIONS_FILE, Durations, measured_rows
from scripts.lib.environment import stack_names
from scripts.lib.errors import Exit


def run(env: str = "dev", cdk_out: Path = Path("cdk.out"), as_json: bool = False) -> Exit:
    cfg = runtime.config(env)
    cfn = runtime.CLIENTS(cfg, None).aws("cloudformation")
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
        return Exit.OK
    grid = Table(title=f"measured vs assumed minutes: {env} ({DURATIONS_FILE.name})")
    for col in ("stack", "resource", "type", "phase", "assumed", "measured", "ratio"):
        grid.add_column(col)
    for r in rows:
        ratio = f"{r.measured / r.assumed:.2f}" if r.assumed else "-"
        grid.add_row(
            r.stack, r.logical_id, r.type, r.phase, f"{r.assumed:.1f}", f"{r.measured:.1f}", ratio
        )
    runtime.out.print(grid)
    for stack in missing:
        runtime.out.print(f"note: stack {stack} does not exist (not deployed, or deleted)")
    return Exit.OK
