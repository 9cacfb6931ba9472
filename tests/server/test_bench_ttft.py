"""``make bench-ttft`` (tools/bench/ttft.py) end to end on the recommended image, with the server
layer's tiny shape instead of Qwen3-0.6B's (the same code path, a prefix of 4,096 tokens, five
requests a figure): its one line, from L2 faster than cold, the floor below the L2 hit. And its
own checks refuse figures that do not come from the tier they name: a B that does not share A's
folder, an A whose vLLM KV cache still holds the repeated prefixes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from infra.config.images import RECOMMENDED
from scripts.lib.openai_stream import list_models
from tests.support.lmcache_mp import MP_IMAGES
from tools.bench import ttft

TAG = RECOMMENDED.rpartition(":")[2]
LINE = re.compile(
    r"^TTFT (?P<tag>\S+) (?P<mp>mp )?.*prefix (?P<tokens>[\d,]+) tokens, median of 5: cold on B "
    r"(?P<cold>[\d,]+) ms, L2 hit on B (?P<l2>[\d,]+) ms, L1 hit on A (?P<l1>[\d,]+) ms; "
    r"cold/L2 (?P<ratio>[\d.]+)x; floor (?P<floor>[\d,]+) ms \(plain read of [\d.,]+ MB"
)


def _number(text: str) -> float:
    return float(text.replace(",", ""))


@pytest.mark.parametrize("mode", ttft.MODES)
def test_bench_ttft_prints_the_ratio_and_the_floor(
    mode: str, tmp_path: Path, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not ttft.python_of(TAG).exists():
        pytest.skip(f"{TAG}: no .venv-server/{TAG}")
    if mode == "mp" and TAG not in MP_IMAGES:
        pytest.skip(f"{TAG}: its LMCache has no MP server that runs here")
    # The layer's tiny model, made by the script the tool runs (tests/server/make_model.py).
    (tmp_path / "model-tiny").symlink_to(model_dir)
    printed = ttft.run_image(TAG, "tiny", 4096, 5, tmp_path, 4000, mode, eager=True)
    with capsys.disabled():
        print(f"\n{printed}")  # the figures, in the layer's output
    m = LINE.match(printed)
    assert m is not None, printed
    cold, l2, floor = (_number(m[k]) for k in ("cold", "l2", "floor"))
    assert (m["tag"], bool(m["mp"]), _number(m["tokens"]) >= 4000) == (TAG, mode == "mp", True)
    assert cold > l2 > 0 and _number(m["l1"]) > 0
    # The ratio is printed to 0.1 from the unrounded times, the times to the millisecond.
    assert _number(m["ratio"]) == pytest.approx(cold / l2, rel=0.05, abs=0.06)
    assert 0 < floor < l2


def test_bench_ttft_refuses_an_l2_hit_that_did_not_come_from_l2(fleet: Any) -> None:
    """The fleet's replicas (tests/server/conftest.py): A stores, the other endpoint's replica
    (another subPath) reads nothing; and A's own vLLM KV cache, sized for the server layer,
    still holds the prefix it is asked again."""
    a, other = fleet["a"], fleet["other"]
    (mount,) = a.container.claims
    l2 = a.container.mounts[mount]
    assert l2 is not None
    stored = ttft._prefixes(a.url, list_models(a.url)[0], 600, 2, 77)
    fresh = ttft._prefixes(a.url, list_models(a.url)[0], 600, 1, 88)
    with pytest.raises(SystemExit, match=r"vLLM's KV cache held them"):
        ttft.on_a(a, l2, stored)
    files = [sorted(l2.glob("*.data"))]
    with pytest.raises(SystemExit, match=r"replica B read 0 chunks from L2"):
        ttft.on_b(other, fresh, stored[:1], files)
