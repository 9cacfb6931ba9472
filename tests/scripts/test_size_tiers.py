"""`size --prompt-tokens`: read-back vs recompute per tier, working set and the recommendation,
checked by hand for two models (arithmetic in the comments). Pure functions and the CLI in
process (typer's CliRunner); no double."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scripts.cli import app
from scripts.lib.sizing import GIB, PRESETS
from scripts.lib.tier_advice import fsx_capacity_for, tier_advice

CURVINE_BPS = 0.1028 * GIB / 0.056  # 1,971,083,205 B/s: 0.1028 GiB read in ~56 ms


def _reads(advice: object) -> dict[str, float]:
    return {r.tier: r.seconds for r in advice.reads}  # type: ignore[attr-defined]


def test_qwen2_7b_long_prompt_prefers_curvine() -> None:
    a = tier_advice(
        PRESETS["qwen2-7b"], prompt_tokens=50_000, sessions=100, context_tokens=100_000,
        curvine_pool_bytes=2 * 400 * GIB, fsx_capacity_gib=1200, fsx_throughput_mb_per_tib=250,
        gpus=1, prefill_tokens_per_s=10_000,
    )  # fmt: skip
    # 57,344 B/token x 50,000 = 2,867,200,000 B; recompute 50,000 / 10,000 = 5 s
    assert a.prompt_bytes == 2_867_200_000 and a.recompute_seconds == 5.0
    reads = _reads(a)
    assert reads["curvine"] == pytest.approx(2.8672e9 / 1_971_083_205, rel=1e-6)  # 1.4546 s
    # FSx 1200 GiB x 250 MB/s/TiB = 292,968,750 B/s: 0.0005 + 9.7867 = 9.7872 s (slower)
    assert a.fsx_bytes_per_s == 292_968_750
    assert reads["fsx_lustre"] == pytest.approx(9.78721, rel=1e-5)
    assert reads["l1_dram"] == pytest.approx(10e-6 + 2.8672e9 / 200e9)  # 0.01435 s
    # 100 sessions x 100,000 tokens x 57,344 B = 573.44 GB <= 2 x 400 GiB (858.99 GB)
    assert a.working_set_bytes == 573_440_000_000
    assert a.recommendation == "curvine"


def test_llama_70b_agentic_working_set_needs_fsx() -> None:
    a = tier_advice(
        PRESETS["llama-3.1-70b"], prompt_tokens=100_000, sessions=500, context_tokens=200_000,
        curvine_pool_bytes=2 * 400 * GIB, fsx_capacity_gib=1200, fsx_throughput_mb_per_tib=1000,
        gpus=4, prefill_tokens_per_s=5_000,
    )  # fmt: skip
    # 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B/token; recompute 100,000 / 5,000 = 20 s
    assert a.prompt_bytes == 32_768_000_000 and a.recompute_seconds == 20.0
    # 500 x 200,000 x 327,680 B = 32.768 TB = 30,517.6 GiB -> 13 x 2400 = 31,200 GiB
    assert a.working_set_tb == pytest.approx(32.768)
    assert a.fsx_capacity_gib_needed == 31_200
    # judged at 31,200 GiB x 1000 MB/s/TiB = 30.5 GB/s, capped by the 12.5 GB/s client link
    assert a.fsx_bytes_per_s == 12.5e9
    reads = _reads(a)
    assert reads["fsx_lustre"] == pytest.approx(0.0005 + 32.768e9 / 12.5e9)  # 2.6219 s
    assert reads["curvine"] == pytest.approx(32.768e9 / CURVINE_BPS)  # 16.62 s: wins, too small
    assert reads["s3"] == pytest.approx(1.0 + 32.768e9 / 12.5e9)
    assert a.recommendation == "fsx_lustre" and "exceeds the NVMe pool" in a.reason


def test_short_prompt_recomputes() -> None:
    a = tier_advice(
        PRESETS["llama-3.1-8b"], prompt_tokens=500, sessions=10, context_tokens=500,
        curvine_pool_bytes=2 * 400 * GIB, fsx_capacity_gib=1200, fsx_throughput_mb_per_tib=125,
        gpus=1, prefill_tokens_per_s=20_000,
    )  # fmt: skip
    # 500 x 131,072 B = 65.5 MB; Curvine 0.0333 s > recompute 0.025 s
    assert a.recommendation == "none" and "10,000 tokens" in a.reason


@pytest.mark.parametrize(
    ("nbytes", "gib"), [(1, 1200), (1200 * GIB, 1200), (1200 * GIB + 1, 2400), (4801 * GIB, 7200)]
)
def test_fsx_capacity_steps(nbytes: int, gib: int) -> None:
    assert fsx_capacity_for(nbytes) == gib


def test_cli_prints_and_emits_the_advice() -> None:
    args = ["size", "qwen2-7b", "--prompt-tokens", "50000", "--sessions", "100",
            "--context-tokens", "100000", "--prefill-tokens-per-s", "10000"]  # fmt: skip
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    advice = json.loads(result.output)["tier_advice"]
    assert advice["recommendation"] == "curvine" and advice["working_set_tb"] == 0.573
    text = CliRunner().invoke(app, args).output
    assert "recommend: curvine" in text and "working set: 100 sessions" in text
