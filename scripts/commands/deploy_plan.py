"""``hpkv deploy-plan``: how long ``cdk deploy --all`` and ``cdk destroy --all`` take, modelled from
the synthesized templates in cdk.out (``make synth`` first) and the durations table
(scripts/lib/deploy_durations.yaml): as deployed, the floor, and the critical path."""

from __future__ import annotations

import json
from pathlib import Path

from scripts.lib import runtime
from scripts.lib.deploy_plan import DURATIONS_FILE, Durations, report
from scripts.lib.errors import Exit


def run(out: Path = Path("cdk.out"), png: Path | None = None, as_json: bool = False) -> Exit:
    if not (out / "manifest.json").is_file():
        raise runtime.fail(f"no cloud assembly in {out}: run `make synth` first", Exit.USAGE)
    durations = Durations.load()
    figures = report(out, durations, png)
    if as_json:
        print(json.dumps(figures))
        return Exit.OK
    for verb in ("deploy", "destroy"):
        f = figures[verb]
        print(
            f"cdk {verb} --all: {f['as_deployed_minutes']} min as deployed, floor "
            f"{f['floor_minutes']} min, ratio {f['ratio']} (estimates: {DURATIONS_FILE.name})"
        )
        for item in f["critical_path"]:
            if item["end"] - item["start"] >= 1:  # the long steps of the path
                print(f"  {item['start']:>6} -> {item['end']:>6}  {item['stack']}  "
                      f"{item['resource']} ({item['type']})")  # fmt: skip
    if png:
        print(f"wrote {png}")
    return Exit.OK
