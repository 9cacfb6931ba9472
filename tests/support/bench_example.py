"""Renders ``docs/example-report/``: ``hpkv bench compare`` against the fake model servers of
``fleet.py`` (two replicas per tier, per-token delays injected per tier), so the committed
example shows what a report looks like, not how a cluster performs.

    .venv/bin/python -m tests.support.bench_example docs/example-report
"""

from __future__ import annotations

import sys
from pathlib import Path

from infra.config import load_config
from scripts.commands.bench_compare import compare_tiers
from scripts.lib.bench_compare import report
from scripts.lib.bench_compare.run import Comparison, Overrides
from scripts.lib.bench_compare.targets import BenchTarget
from scripts.lib.bench_compare.workloads import Waits
from tests.support.bench_fleet import COLD, L0, L1, L2, fleet

SEED = 7
# Fewer lengths and a shorter chat than bench's defaults: the example renders in about half a
# minute.
GIVEN = Overrides(lengths=(500, 1500, 2500), users=4, rounds=3, concurrency=4)
HEADING = "KV-cache tiers compared: an example"
NOTE = (
    "EXAMPLE, rendered from the project's fake model server (tests/doubles/fake_vllm.py) with "
    f"injected per-token delays: recomputed {COLD} ms, GPU {L0} ms, CPU {L1} ms, Curvine "
    f"{L2['curvine']} ms, Tiered Storage {L2['tieredstorage']} ms. It shows how to read a "
    "report; its figures measure no cluster. Regenerate: .venv/bin/python -m "
    "tests.support.bench_example docs/example-report"
)


def render(folder: Path) -> Comparison:
    cfg = load_config("dev")
    with fleet() as servers:
        tiers = [
            BenchTarget(tier, f"example/{tier}", (a.url, b.url), (a.url, b.url))  # type: ignore[arg-type]
            for tier, (a, b) in servers.items()
        ]
        joiners = {f"example/{tier}": servers.joiner(tier) for tier in servers}
        result = compare_tiers(cfg, tiers, SEED, GIVEN, Waits(settle_s=0, flush_s=0), joiners)
    report.write(
        result,
        folder,
        cfg.observability.kv_bytes_per_token,
        HEADING,
        NOTE,
        guide="[bench-compare.md](../bench-compare.md)",
    )
    return result


if __name__ == "__main__":
    render(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/example-report"))
