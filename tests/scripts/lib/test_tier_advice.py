"""Which shared tier pays off: read-back against recompute per tier, the working set and the
recommendation with its reason, checked by hand for two models and at the boundaries (arithmetic in
the comments). Pure functions; no double."""

from __future__ import annotations

from typing import Any

import pytest

from scripts.lib.sizing import (
    GIB,
    PRESETS,
)
from scripts.lib.tier_advice import fsx_capacity_for, tier_advice

QWEN_50K = dict(
    prompt_tokens=50_000,
    sessions=100,
    context_tokens=100_000,
    curvine_pool_bytes=2 * 400 * GIB,
    fsx_capacity_gib=1200,
    fsx_throughput_mb_per_tib=250,
    gpus=1,
    prefill_tokens_per_s=10_000,
)


@pytest.mark.parametrize(
    ("preset", "change", "recommendation", "reason"),
    [
        # 50,000 x 57,344 B = 2.8672 GB: Curvine 2.8672e9 / 1.971e9 B/s = 1.455 s < 5 s to
        # recompute; 100 x 100,000 x 57,344 B = 0.573 TB fits 2 x 400 GiB = 0.859 TB
        (
            "qwen2-7b",
            {},
            "curvine",
            "a Curvine read (1.455 s) beats recomputing (5.000 s) and the working set (0.573 TB) "
            "fits the NVMe pool (0.859 TB)",
        ),
        # 500 x 200,000 x 327,680 B = 32.768 TB > 0.859 TB; FSx at 31,200 GiB is capped by the
        # 12.5 GB/s client: 0.0005 + 32.768e9 / 12.5e9 = 2.622 s < 100,000 / 5,000 = 20 s
        (
            "llama-3.1-70b",
            dict(
                prompt_tokens=100_000,
                sessions=500,
                context_tokens=200_000,
                fsx_throughput_mb_per_tib=1000,
                gpus=4,
                prefill_tokens_per_s=5_000,
            ),
            "fsx_lustre",
            "an FSx read (2.622 s) beats recomputing (20.000 s) and the working set (32.768 TB) "
            "exceeds the NVMe pool (0.859 TB); size it at >= 31200 GiB",
        ),
        # recompute 50,000 / 50,000 = 1 s: Curvine (1.455 s) loses, FSx 14,400 GiB x 1000 MB/s/TiB
        # capped at 12.5 GB/s: 0.0005 + 2.8672e9 / 12.5e9 = 0.230 s wins
        (
            "qwen2-7b",
            dict(
                prefill_tokens_per_s=50_000, fsx_capacity_gib=14_400, fsx_throughput_mb_per_tib=1000
            ),
            "fsx_lustre",
            "an FSx read (0.230 s) beats recomputing (1.000 s) and a Curvine read does not beat "
            "recomputing; size it at >= 1200 GiB",
        ),
        # a 100 GiB pool holds 107.37 / 573.44 GB = 19% of the working set; FSx 1200 GiB x
        # 125 MB/s/TiB = 146.5 MB/s: 0.0005 + 2.8672e9 / 146.48e6 = 19.574 s > 5 s
        (
            "qwen2-7b",
            dict(curvine_pool_bytes=100 * GIB, fsx_throughput_mb_per_tib=125),
            "curvine",
            "a Curvine read (1.455 s) beats recomputing (5.000 s) and an FSx read (19.574 s at "
            "1200 GiB x 125 MB/s/TiB) does not; the NVMe pool holds 19% of the working set (the "
            "evictor keeps the newest)",
        ),
        # 500 x 131,072 B = 65.5 MB: Curvine 0.033 s, FSx 0.0005 + 65.536e6 / 146.48e6 = 0.448 s,
        # both slower than 500 / 20,000 = 0.025 s
        (
            "llama-3.1-8b",
            dict(
                prompt_tokens=500,
                sessions=10,
                context_tokens=500,
                fsx_throughput_mb_per_tib=125,
                prefill_tokens_per_s=20_000,
            ),
            "none",
            "recomputing 500 tokens (0.025 s) is as fast as reading them back from a shared tier "
            "(Curvine 0.033 s, FSx 0.448 s at 0.15 GB/s, Tiered Storage 0.008 s but no "
            "reservation); "
            "the storage post: under ~10,000 tokens "
            "tiering rarely pays off",
        ),
        # 9,999 x 131,072 B = 1.3106 GB: FSx 0.0005 + 1.3106e9 / 146.48e6 = 8.947 s; 9,999
        # tokens are still under the storage post's line
        (
            "llama-3.1-8b",
            dict(
                prompt_tokens=9_999,
                sessions=10,
                context_tokens=500,
                fsx_throughput_mb_per_tib=125,
                prefill_tokens_per_s=1e9,
            ),
            "none",
            "recomputing 9,999 tokens (0.000 s) is as fast as reading them back from a shared tier "
            "(Curvine 0.665 s, FSx 8.947 s at 0.15 GB/s, Tiered Storage 0.132 s); the storage "
            "post: under ~10,000 tokens tiering rarely pays off",
        ),
        # 10,000 tokens: on the line, no remark
        (
            "llama-3.1-8b",
            dict(
                prompt_tokens=10_000,
                sessions=10,
                context_tokens=500,
                fsx_throughput_mb_per_tib=125,
                prefill_tokens_per_s=1e9,
            ),
            "none",
            "recomputing 10,000 tokens (0.000 s) is as fast as reading them back from a shared "
            "tier "
            "(Curvine 0.665 s, FSx 8.948 s at 0.15 GB/s, Tiered Storage 0.132 s)",
        ),
    ],
)
def test_the_recommendation_and_its_reason(
    preset: str, change: dict[str, Any], recommendation: str, reason: str
) -> None:
    advice = tier_advice(PRESETS[preset], **{**QWEN_50K, **change})  # type: ignore[arg-type]
    assert (advice.recommendation, advice.reason) == (recommendation, reason)


def test_the_prefill_estimate_and_the_advice_as_json() -> None:
    advice = tier_advice(
        PRESETS["llama-3.1-8b"],
        prompt_tokens=10_000,
        sessions=10,
        context_tokens=500,
        curvine_pool_bytes=2 * 400 * GIB,
        fsx_capacity_gib=1200,
        fsx_throughput_mb_per_tib=125,
        gpus=2,
        params=10**10,
        kv_dtype="fp8",
    )
    # 2 GPUs x 100e12 FLOP/s / (2 x 1e10) = 10,000 tokens/s: 1 s for 10,000 tokens.
    # fp8: 2 x 32 x 8 x 128 x 1 B = 65,536 B/token; 10,000 tokens = 655,360,000 B.
    data = advice.as_dict()
    reads = data.pop("reads")
    assert [(r["tier"], r["beats_recompute"]) for r in reads] == [
        ("l1", True),
        ("curvine", True),
        ("fsx_lustre", False),
        ("tieredstorage", True),
    ]
    # l1: 10 us + 655.36e6 / 200e9; FSx 1200 GiB x 125 MB/s/TiB = 146,484,375 B/s; Tiered
    # Storage (assumed): 1 ms + 655.36e6 / 10e9
    assert [r["seconds"] for r in reads] == pytest.approx(
        [
            10e-6 + 655.36e6 / 200e9,
            655.36e6 / (0.1028 * GIB / 0.056),
            0.0005 + 655.36e6 / 146_484_375,
            0.001 + 655.36e6 / 10e9,
        ]
    )
    assert data == {
        "prompt_tokens": 10_000,
        "prompt_bytes": 655_360_000,
        "prefill_tokens_per_s": 10_000.0,
        "prefill_source": "estimate: 2 GPU x 100 TFLOP/s / (2 x params); pass a measured rate",
        "recompute_seconds": 1.0,
        "sessions": 10,
        "context_tokens": 500,
        "working_set_bytes": 327_680_000,  # 10 x 500 x 65,536 B
        "curvine_pool_bytes": 2 * 400 * GIB,
        "fsx_bytes_per_s": 146_484_375.0,
        "tieredstorage_bytes": 0,
        "recommendation": "curvine",
        "reason": "a Curvine read (0.332 s) beats recomputing (1.000 s) and the working set "
        "(0.000 TB) fits the NVMe pool (0.859 TB)",
        "fsx_capacity_gib_needed": 1200,
        "working_set_tb": 0.0,
    }


def test_the_prefill_estimate_counts_the_parameters_itself() -> None:
    a = tier_advice(PRESETS["qwen2-7b"], **{**QWEN_50K, "prefill_tokens_per_s": None})
    # 100e12 / (2 x 7,615,283,200 estimated params) = 6,565.74 tokens/s
    assert a.prefill_tokens_per_s == pytest.approx(6565.744, abs=1e-3)
    b = tier_advice(PRESETS["qwen2-7b"], **QWEN_50K)
    assert b.prefill_source == "measured (--prefill-tokens-per-s)"


def test_the_working_set_in_tb_keeps_three_decimals() -> None:
    a = tier_advice(PRESETS["qwen2-7b"], **{**QWEN_50K, "sessions": 1, "context_tokens": 12_345})
    # 12,345 x 57,344 B = 707,911,680 B = 0.000708 TB -> 0.001
    assert a.as_dict()["working_set_tb"] == 0.001 and a.working_set_tb == 707_911_680 / 1e12


@pytest.mark.parametrize(
    ("nbytes", "gib"),
    [
        (0, 1200),
        (1200 * GIB, 1200),
        (1200 * GIB + 1, 2400),
        (2400 * GIB, 2400),
        (2400 * GIB + 1, 4800),
        (4800 * GIB, 4800),
        (4801 * GIB, 7200),
    ],
)
def test_fsx_capacity_is_1200_gib_then_steps_of_2400(nbytes: int, gib: int) -> None:
    assert fsx_capacity_for(nbytes) == gib


# 1 layer x 1 KV head x head dim 64: 2 x 64 x 2 B = 256 B per token, so byte counts come out round.
ONE_LAYER = {"num_hidden_layers": 1, "num_attention_heads": 1, "hidden_size": 64}


def test_a_working_set_exactly_the_pool_size_fits_it() -> None:
    # 1,953,125 tokens x 256 B = 500,000,000 B = 0.0005 TB, shown rounded up as 0.001 TB
    a = tier_advice(
        ONE_LAYER,
        prompt_tokens=1_000,
        sessions=1,
        context_tokens=1_953_125,
        curvine_pool_bytes=500_000_000,
        fsx_capacity_gib=1200,
        fsx_throughput_mb_per_tib=125,
        gpus=1,
        prefill_tokens_per_s=1_000,
    )
    assert (a.recommendation, a.reason) == (
        "curvine",
        "a Curvine read (0.000 s) beats recomputing (1.000 s) and the working set (0.001 TB) "
        "fits the NVMe pool (0.001 TB)",
    )


def test_a_read_as_slow_as_recomputing_does_not_beat_it() -> None:
    # 48,828,125 tokens x 256 B = 12.5e9 B; FSx 1200 GiB x 12,000 MB/s/TiB is capped at the
    # 12.5 GB/s client link: 1.0005 s; recompute 48,828,125 / 24,414,062.5 tokens/s = 2 s; Curvine
    # 12.5e9 / 1,971,083,205 B/s = 6.34 s
    a = tier_advice(
        ONE_LAYER,
        prompt_tokens=48_828_125,
        sessions=1,
        context_tokens=48_828_125,
        curvine_pool_bytes=12_500_000_000,
        fsx_capacity_gib=1200,
        fsx_throughput_mb_per_tib=12_000,
        gpus=1,
        prefill_tokens_per_s=24_414_062.5,
    )
    assert a.recompute_seconds == 2.0
    assert [(r.tier, r.beats_recompute) for r in a.reads] == [
        ("l1", True),
        ("curvine", False),
        ("fsx_lustre", True),
        ("tieredstorage", True),
    ]
    assert [r.seconds for r in a.reads if r.tier != "curvine"] == [0.06251, 1.0005, 1.251]
    # the working set is the pool's size: it is Curvine's speed, not its room, that rules it out
    assert a.reason == (
        "an FSx read (1.000 s) beats recomputing (2.000 s) and a Curvine read does not beat "
        "recomputing; size it at >= 1200 GiB"
    )


def test_a_working_set_over_the_pool_is_shown_in_tb_rounded_half_up() -> None:
    # 9,765,625 tokens x 256 B = 2.5e9 B = 0.0025 TB (shown 0.003) over a 0.0015 TB pool (0.002);
    # FSx: 0.0005 + 256,000 B / 146,484,375 B/s = 0.002 s, against 1,000 / 100 = 10 s
    a = tier_advice(
        ONE_LAYER,
        prompt_tokens=1_000,
        sessions=1,
        context_tokens=9_765_625,
        curvine_pool_bytes=1_500_000_000,
        fsx_capacity_gib=1200,
        fsx_throughput_mb_per_tib=125,
        gpus=1,
        prefill_tokens_per_s=100,
    )
    assert (a.recommendation, a.reason) == (
        "fsx_lustre",
        "an FSx read (0.002 s) beats recomputing (10.000 s) and the working set (0.003 TB) "
        "exceeds the NVMe pool (0.002 TB); size it at >= 1200 GiB",
    )


def test_the_fsx_rate_in_the_none_reason_is_rounded_half_up() -> None:
    # 5,120 GiB = 5 TiB x 27 MB/s/TiB = 135,000,000 B/s, shown as 0.14 GB/s; 1,000 tokens
    # x 256 B = 256,000 B: FSx 0.0005 + 0.0019 = 0.002 s, slower than 1,000 / 1e9 tokens/s
    a = tier_advice(
        ONE_LAYER,
        prompt_tokens=1_000,
        sessions=1,
        context_tokens=1_000,
        curvine_pool_bytes=0,
        fsx_capacity_gib=5120,
        fsx_throughput_mb_per_tib=27,
        gpus=1,
        prefill_tokens_per_s=1e9,
    )
    assert a.reason == (
        "recomputing 1,000 tokens (0.000 s) is as fast as reading them back from a shared tier "
        "(Curvine 0.000 s, FSx 0.002 s at 0.14 GB/s, Tiered Storage 0.001 s); the storage post: "
        "under ~10,000 tokens tiering rarely pays off"
    )


CURVINE_BPS = 0.1028 * GIB / 0.056  # 1,971,083,205 B/s: 0.1028 GiB read in ~56 ms


def _reads(advice: object) -> dict[str, float]:
    return {r.tier: r.seconds for r in advice.reads}  # type: ignore[attr-defined]


def test_qwen2_7b_long_prompt_prefers_curvine() -> None:
    a = tier_advice(
        PRESETS["qwen2-7b"],
        prompt_tokens=50_000,
        sessions=100,
        context_tokens=100_000,
        curvine_pool_bytes=2 * 400 * GIB,
        fsx_capacity_gib=1200,
        fsx_throughput_mb_per_tib=250,
        gpus=1,
        prefill_tokens_per_s=10_000,
    )
    # 57,344 B/token x 50,000 = 2,867,200,000 B; recompute 50,000 / 10,000 = 5 s
    assert a.prompt_bytes == 2_867_200_000 and a.recompute_seconds == 5.0
    reads = _reads(a)
    assert reads["curvine"] == pytest.approx(2.8672e9 / 1_971_083_205, rel=1e-6)  # 1.4546 s
    # FSx 1200 GiB x 250 MB/s/TiB = 292,968,750 B/s: 0.0005 + 9.7867 = 9.7872 s (slower)
    assert a.fsx_bytes_per_s == 292_968_750
    assert reads["fsx_lustre"] == pytest.approx(9.78721, rel=1e-5)
    assert reads["l1"] == pytest.approx(10e-6 + 2.8672e9 / 200e9)  # 0.01435 s
    # 100 sessions x 100,000 tokens x 57,344 B = 573.44 GB <= 2 x 400 GiB (858.99 GB)
    assert a.working_set_bytes == 573_440_000_000
    assert a.recommendation == "curvine"


def test_llama_70b_agentic_working_set_needs_fsx() -> None:
    a = tier_advice(
        PRESETS["llama-3.1-70b"],
        prompt_tokens=100_000,
        sessions=500,
        context_tokens=200_000,
        curvine_pool_bytes=2 * 400 * GIB,
        fsx_capacity_gib=1200,
        fsx_throughput_mb_per_tib=1000,
        gpus=4,
        prefill_tokens_per_s=5_000,
    )
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
    assert reads["tieredstorage"] == pytest.approx(0.001 + 32.768e9 / 10e9)  # assumed figures
    assert a.recommendation == "fsx_lustre" and "exceeds the NVMe pool" in a.reason


def test_short_prompt_recomputes() -> None:
    a = tier_advice(
        PRESETS["llama-3.1-8b"],
        prompt_tokens=500,
        sessions=10,
        context_tokens=500,
        curvine_pool_bytes=2 * 400 * GIB,
        fsx_capacity_gib=1200,
        fsx_throughput_mb_per_tib=125,
        gpus=1,
        prefill_tokens_per_s=20_000,
    )
    # 500 x 131,072 B = 65.5 MB; Curvine 0.0333 s > recompute 0.025 s
    assert a.recommendation == "none" and "10,000 tokens" in a.reason


@pytest.mark.parametrize(
    ("nbytes", "gib"), [(1, 1200), (1200 * GIB, 1200), (1200 * GIB + 1, 2400), (4801 * GIB, 7200)]
)
def test_fsx_capacity_steps(nbytes: int, gib: int) -> None:
    assert fsx_capacity_for(nbytes) == gib


# Tiered Storage (assumed 1 ms + 10 GB/s) against recomputing at 2e7 tokens/s, 256 B a token:
# 0.001 + 2.56e-8 n < 5e-8 n from n > 40,983.6; Curvine (1.2988e-7 n) and FSx (0.0005 + n x 256 /
# 146,484,375) never beat it.
TS_CASE = dict(
    sessions=1,
    context_tokens=1_000,
    curvine_pool_bytes=800 * GIB,
    fsx_capacity_gib=1200,
    fsx_throughput_mb_per_tib=125,
    gpus=1,
    prefill_tokens_per_s=2e7,
)


@pytest.mark.parametrize(
    ("tokens", "recommendation"), [(40_983, "none"), (40_984, "tieredstorage")]
)
def test_tiered_storage_is_recommended_from_the_token_its_read_beats_recomputing(
    tokens: int, recommendation: str
) -> None:
    a = tier_advice(ONE_LAYER, prompt_tokens=tokens, tieredstorage_bytes=25 * GIB, **TS_CASE)
    verdicts = {r.tier: r.beats_recompute for r in a.reads}
    assert verdicts["tieredstorage"] is (recommendation == "tieredstorage")
    assert not verdicts["curvine"] and not verdicts["fsx_lustre"]
    assert a.recommendation == recommendation
    assert (a.flag is None) is (recommendation != "none")


def test_tiered_storage_without_a_reservation_is_never_recommended() -> None:
    a = tier_advice(ONE_LAYER, prompt_tokens=40_984, **TS_CASE)
    assert a.recommendation == "none" and a.reason.endswith("but no reservation)")
    assert a.flag is not None and a.flag.startswith("l2_does_not_pay_off")
