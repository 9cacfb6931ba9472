"""`make bench`'s L2 comparison (tools/bench/l2_throughput.py) on each image's LMCache: both
sides measured, every rate and ratio as printed from the same rounds, and nothing of its chunks
left in the folder it measured in."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.runtime import ROOT, python_of

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
    tool = ROOT / "tools" / "bench" / "l2_throughput.py"
    args = [str(python_of(image)), str(tool), "--chunks", "2", "--rounds", "2", "--dir"]
    done = subprocess.run(
        [*args, str(tmp_path)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "in the 1 rounds each side wrote first" in done.stdout
    found = {m["what"]: m for m in RATES.finditer(done.stdout)}
    assert set(found) == {"write", "read"}, done.stdout
    for m in found.values():
        ours, disk = _number(m["ours"]), _number(m["disk"])
        assert ours > 0 and disk > 0
        assert _number(m["ratio"]) == pytest.approx(ours / disk, abs=0.01)
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]
