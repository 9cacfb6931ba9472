"""`make bench`'s L2 comparison (tools/bench/l2_throughput.py) on each image's LMCache: both
sides measured, every rate and ratio as printed, each side's writes counted from the rounds it
wrote first and its reads from every round, and nothing of its chunks left in the folder it
measured in."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.support.runtime import ROOT, python_of

TOOL = ROOT / "tools" / "bench" / "l2_throughput.py"
# The rates measure() took, counted by name (os._exit: LMCache's event-loop thread would keep
# the interpreter alive).
COUNT = (
    "import json, os, sys\n"
    "from pathlib import Path\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "from l2_throughput import measure\n"
    "rates = measure(Path(sys.argv[2]), 2, 4)\n"
    "print(json.dumps({name: len(taken) for name, taken in rates.items()}), flush=True)\n"
    "os._exit(0)\n"
)

RATES = re.compile(
    r"^  (?P<what>write|read): connector (?P<ours>[\d,]+) \[[\d,]+-[\d,]+\], "
    r"plain (?P<disk>[\d,]+) \[[\d,]+-[\d,]+\], ratio of medians (?P<ratio>[\d.]+)$",
    re.MULTILINE,
)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def test_the_comparison_measures_both_sides_and_leaves_the_folder_empty(
    image: str, tmp_path: Path
) -> None:
    args = [str(python_of(image)), str(TOOL), "--chunks", "2", "--rounds", "2", "--dir"]
    done = subprocess.run(
        [*args, str(tmp_path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = {m["what"]: m for m in RATES.finditer(done.stdout)}
    assert set(found) == {"write", "read"}, done.stdout
    for m in found.values():
        ours, disk = _number(m["ours"]), _number(m["disk"])
        assert ours > 0 and disk > 0
        assert _number(m["ratio"]) == pytest.approx(ours / disk, abs=0.01)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_each_side_writes_first_in_half_the_rounds_and_reads_in_all(
    image: str, tmp_path: Path
) -> None:
    """A write that follows the other side's waits out its write-back: only the rounds a side
    wrote first count, and the side going first alternates."""
    args = [str(python_of(image)), "-c", COUNT, str(TOOL.parent), str(tmp_path)]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    counted = json.loads(done.stdout.strip().splitlines()[-1])
    assert counted == {"connector put": 2, "plain write": 2, "connector get": 4, "plain read": 4}
