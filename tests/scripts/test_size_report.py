"""`size`: the figures and messages a user reads, pinned exactly for inputs worked by hand in the
comments: config.json loading and its one-line errors, dtypes, the three tiers and their flags,
and the tier advice's recommendation and reason. Pure functions only; no double."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scripts.lib.sizing import (
    GIB,
    PRESETS,
    SizingError,
    dtype_bytes,
    kv_bytes_per_token,
    load_model_config,
    size_model,
)
from scripts.lib.tier_advice import fsx_capacity_for, tier_advice

# 4 layers x 2 KV heads x head dim 512 / 8 = 64: 2 x 4 x 2 x 64 x 2 B = 2,048 KV bytes per token.
SMALL = {"num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2,
         "hidden_size": 512, "intermediate_size": 1024, "vocab_size": 1000,
         "torch_dtype": "bfloat16"}  # fmt: skip
HF = "pass a Hugging Face config.json"
MAX = "expected a whole number from 0 to 10,000,000"


def _write(tmp_path: Path, content: Any) -> Path:
    path = tmp_path / "config.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


# ---- loading config.json -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe{}", "{path}: not a text file; " + HF),
        ("{", "{path}: not valid JSON (Expecting property name enclosed in double quotes: line 1 "
              "column 2 (char 1)); " + HF),
        ("[1]", "{path}: a JSON list, not an object; " + HF),
        ({"text_config": [1]}, "{path}: text_config is a list, not an object"),
        # every architecture field is checked, the last one too, and the message names it
        ({**SMALL, "first_k_dense_replace": -1}, f"{{path}}: first_k_dense_replace is '-1'; {MAX}"),
        ({**SMALL, "num_hidden_layers": 10_000_001},
         f"{{path}}: num_hidden_layers is '10000001'; {MAX}"),
        ({**SMALL, "hidden_size": True}, f"{{path}}: hidden_size is 'True'; {MAX}"),
        ({**SMALL, "hidden_size": 4.5}, f"{{path}}: hidden_size is '4.5'; {MAX}"),
        ({**SMALL, "hidden_size": "4096"}, f"{{path}}: hidden_size is '4096'; {MAX}"),
        # the shown value is cut at 40 characters
        ({**SMALL, "vocab_size": "x" * 50}, f"{{path}}: vocab_size is '{'x' * 40}'; {MAX}"),
        ({**SMALL, "torch_dtype": 16}, "{path}: torch_dtype is '16'; expected e.g. bfloat16"),
        ({**SMALL, "torch_dtype": 10**50},
         f"{{path}}: torch_dtype is '1{'0' * 39}'; expected e.g. bfloat16"),
    ],
)  # fmt: skip
def test_a_bad_config_json_is_one_line_naming_the_file_the_field_and_the_fix(
    tmp_path: Path, content: Any, message: str
) -> None:
    path = _write(tmp_path, content)
    with pytest.raises(SizingError) as err:
        load_model_config(str(path))
    assert str(err.value) == message.format(path=path)


def test_an_unknown_model_names_the_presets(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.json")
    with pytest.raises(SizingError) as err:
        load_model_config(missing)
    assert str(err.value) == (
        f"{missing}: not a file and not a preset (qwen2-7b, llama-3.1-8b, llama-3.1-70b, "
        "llama-3.1-405b, mistral-7b, deepseek-v3)"
    )


@pytest.mark.parametrize("value", [0, 10_000_000])
def test_architecture_fields_at_the_limits_load(tmp_path: Path, value: int) -> None:
    path = _write(tmp_path, {**SMALL, "first_k_dense_replace": value, "q_lora_rank": value})
    assert load_model_config(str(path)) == (str(path), {**SMALL, "first_k_dense_replace": value,
                                                        "q_lora_rank": value})  # fmt: skip


def test_a_folder_means_its_config_json(tmp_path: Path) -> None:
    path = _write(tmp_path, SMALL)
    assert load_model_config(str(tmp_path)) == (str(path), SMALL)


def test_a_preset_is_named_in_any_case_and_copied() -> None:
    label, cfg = load_model_config("Qwen2-7B")
    assert (label, cfg) == ("qwen2-7b", PRESETS["qwen2-7b"])
    cfg["num_hidden_layers"] = 1
    assert PRESETS["qwen2-7b"]["num_hidden_layers"] == 28


@pytest.mark.parametrize(
    ("raw", "dtype"),
    [
        # multimodal: the language model sits under text_config; its dtype falls back to the top
        ({"torch_dtype": "float32", "text_config": SMALL | {"torch_dtype": None}}, "float32"),
        ({"torch_dtype": "float32", "text_config": {k: v for k, v in SMALL.items()
                                                    if k != "torch_dtype"}}, "float32"),
        # a dtype of its own wins
        ({"torch_dtype": "float32", "text_config": SMALL}, "bfloat16"),
        # no dtype anywhere: none is invented
        ({k: v for k, v in SMALL.items() if k != "torch_dtype"}, None),
    ],
)  # fmt: skip
def test_the_text_config_dtype(tmp_path: Path, raw: dict[str, Any], dtype: str | None) -> None:
    _, text = load_model_config(str(_write(tmp_path, raw)))
    assert text.get("torch_dtype") == dtype
    assert text["num_hidden_layers"] == 4


def test_a_text_config_field_out_of_range_is_reported(tmp_path: Path) -> None:
    path = _write(tmp_path, {"text_config": {**SMALL, "head_dim": -5}})
    with pytest.raises(SizingError, match=r"^.*config\.json: head_dim is '-5'; expected"):
        load_model_config(str(path))


# ---- dtypes and bytes per token ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "nbytes"),
    [(None, 2), ("BF16", 2), ("torch.float32", 4), ("fp8", 1), ("int4", 0.5), ("half", 2)],
)
def test_dtype_bytes(name: str | None, nbytes: float) -> None:
    assert dtype_bytes(name) == nbytes


def test_an_unknown_dtype_lists_the_known_ones() -> None:
    with pytest.raises(SizingError) as err:
        dtype_bytes("e5m2")
    assert str(err.value) == (
        "unknown dtype 'e5m2'; known: bf16, bfloat16, float16, float32, float8, float8_e4m3fn, "
        "fp16, fp32, fp8, fp8_e4m3, fp8_e5m2, half, int4, int8"
    )


@pytest.mark.parametrize(
    ("extra", "kv_dtype", "per_token"),
    [
        ({}, None, 2048),  # 2 x 4 layers x 2 KV heads x 64 x 2 B
        ({}, "fp8", 1024),  # the KV dtype halves it
        ({"torch_dtype": "float32"}, None, 4096),
        ({"torch_dtype": None}, None, 2048),  # no dtype: bfloat16
        ({"head_dim": 128}, None, 4096),  # an explicit head dim beats hidden / heads
        ({"num_key_value_heads": None}, None, 8192),  # no GQA: KV heads = 8 heads
        ({"kv_lora_rank": 512}, None, 2048),  # half of MLA's fields: still GQA
        ({"kv_lora_rank": 512, "qk_rope_head_dim": 64}, None, 4608),  # 4 x (512 + 64) x 2 B
        ({"kv_lora_rank": 512, "qk_rope_head_dim": 64}, "fp8", 2304),
        ({"num_hidden_layers": 1}, None, 512),  # the smallest layer count
    ],
)  # fmt: skip
def test_kv_bytes_per_token(extra: dict[str, Any], kv_dtype: str | None, per_token: int) -> None:
    assert kv_bytes_per_token({**SMALL, **extra}, kv_dtype) == per_token


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"num_hidden_layers": 0}, "num_hidden_layers"),
        ({"num_hidden_layers": True}, "num_hidden_layers"),
        ({"num_attention_heads": None}, "num_attention_heads"),
        ({"hidden_size": -1}, "hidden_size"),
    ],
)
def test_a_missing_dimension_is_named(extra: dict[str, Any], field: str) -> None:
    with pytest.raises(SizingError) as err:
        kv_bytes_per_token({**SMALL, **extra})
    assert str(err.value) == f"config.json has no positive integer {field!r}"


# ---- tiers ---------------------------------------------------------------------------------------


def _size(**kw: Any) -> Any:
    args: dict[str, Any] = dict(
        instance_type="ml.test", gpus=2, gpu_memory_gib=24, instance_memory_gib=64, gpu_nodes=3,
        tiered_storage_percent=25, l2_worker_gib=100, params=1_000_000_000,
    )  # fmt: skip
    return size_model("small", SMALL, **{**args, **kw})


def test_tiers_of_a_worked_example() -> None:
    report = _size(gpu_memory_utilization=0.75, overhead_gib_per_gpu=2.0)
    # L0: 2 GPUs x (24 GiB x 0.75 - 2 GiB) = 32 GiB = 34,359,738,368 B, minus 1e9 params x 2 B
    #     = 32,359,738,368 B; / 2,048 B per token = 15,800,653 tokens
    # L1: 64 GiB x 25% = 16 GiB = 17,179,869,184 B = 8,388,608 tokens
    # L2: 100 GiB x 3 nodes = 322,122,547,200 B = 157,286,400 tokens
    assert report.as_dict() == {
        "model": "small",
        "attention": "mha/gqa",
        "kv_bytes_per_token": 2048,
        "kv_dtype_bytes": 2,
        "params": 1_000_000_000,
        "params_source": "--params",
        "weight_bytes": 2_000_000_000,
        "instance_type": "ml.test",
        "gpus_per_node": 2,
        "gpu_nodes": 3,
        "tiers": [
            {"name": "L0", "bytes": 32_359_738_368, "tokens": 15_800_653,
             "scope": "per replica (GPU)"},
            {"name": "L1", "bytes": 17_179_869_184, "tokens": 8_388_608,
             "scope": "per node (Tiered Storage CPU memory)"},
            {"name": "L2", "bytes": 322_122_547_200, "tokens": 157_286_400,
             "scope": "shared by 3 nodes (Curvine NVMe)"},
        ],
        "flags": [],
        "fits": True,
        "weight_gib": 1.86,  # 2e9 / 2^30 = 1.8626
        "tokens_per_tier": {"L0": 15_800_653, "L1": 8_388_608, "L2": 157_286_400},
    }  # fmt: skip


def test_defaults_vllm_takes_90_percent_and_2_gib_per_gpu_overhead() -> None:
    # 2 x (24 x 0.9 - 2) GiB = 39.2 GiB = 42,090,679,500 B (truncated) - 2e9 B of weights
    (l0, *_) = _size().tiers
    assert l0.bytes == int(2 * (24 * 0.9 - 2.0) * GIB) - 2_000_000_000 == 40_090_679_500


def test_weights_follow_the_weight_dtype_and_the_estimate_names_its_source() -> None:
    report = _size(weight_dtype="fp8", kv_dtype="fp8", params=None)
    # SMALL's estimate: embed 1000 x 512 x 2 + 4 x (attn 2x512x8x64 + 2x512x2x64 + mlp 3x512x1024)
    #   = 1,024,000 + 4 x (524,288 + 131,072 + 1,572,864) = 9,936,896 params, 1 B each in fp8
    assert (report.params, report.params_source) == (9_936_896, "architecture")
    assert (report.weight_bytes, report.kv_bytes_per_token, report.kv_dtype_bytes) == (
        9_936_896, 1024, 1)  # fmt: skip


def test_mla_is_reported_as_such() -> None:
    report = size_model(
        "deepseek-v3", PRESETS["deepseek-v3"], instance_type="ml.p5.48xlarge", gpus=8,
        gpu_memory_gib=80, instance_memory_gib=2048, gpu_nodes=2, tiered_storage_percent=0,
        l2_worker_gib=0,
    )  # fmt: skip
    assert report.attention == "mla" and report.kv_bytes_per_token == 61 * 576 * 2
    assert [(t.bytes, t.tokens) for t in report.tiers[1:]] == [(0, 0), (0, 0)]


# One GPU of 4 GiB, all usable (utilization 1, no overhead): 4,294,967,296 B. With 2,048 B per
# token, 4,096 tokens are 8,388,608 B, so 2 x params = 4,286,578,688 leaves exactly 4,096.
EXACT = dict(gpus=1, gpu_memory_gib=4, gpu_memory_utilization=1.0, overhead_gib_per_gpu=0.0)
SMALL_L0 = "l0_small: fewer than 4,096 tokens of KV cache fit on the GPU"


@pytest.mark.parametrize(
    ("params", "prompt_tokens", "fits", "l0_tokens", "flags"),
    [
        (2_143_289_344, 1000, True, 4096, []),
        (2_143_289_345, None, True, 4095, [SMALL_L0]),  # 8,388,606 B: one token short
        (2_147_482_624, None, True, 1, [SMALL_L0]),  # 2,048 B left
        (2_147_483_648, None, False, 0, [  # nothing left
            "model_does_not_fit: weights 4.0 GiB exceed the usable 4.0 GiB of 1 x 4 GiB GPU on "
            "ml.test"]),
        (3 * GIB, 999, False, 0, [  # 6 GiB of weights; L0 is never negative
            "model_does_not_fit: weights 6.0 GiB exceed the usable 4.0 GiB of 1 x 4 GiB GPU on "
            "ml.test",
            "l2_does_not_pay_off: prompts of 999 tokens are under ~1000; recomputing them costs "
            "less than an L2 read"]),
    ],
)  # fmt: skip
def test_flags_at_their_limits(
    params: int, prompt_tokens: int | None, fits: bool, l0_tokens: int, flags: list[str]
) -> None:
    report = _size(params=params, prompt_tokens=prompt_tokens, **EXACT)
    l0 = report.tiers[0]
    assert (report.fits, l0.tokens, report.flags) == (fits, l0_tokens, flags)
    assert l0.bytes == max(4 * GIB - 2 * params, 0)


# ---- which shared tier pays off ------------------------------------------------------------------

QWEN_50K = dict(
    prompt_tokens=50_000, sessions=100, context_tokens=100_000, curvine_pool_bytes=2 * 400 * GIB,
    fsx_capacity_gib=1200, fsx_throughput_mb_per_tib=250, gpus=1, prefill_tokens_per_s=10_000,
)  # fmt: skip


@pytest.mark.parametrize(
    ("preset", "change", "recommendation", "reason"),
    [
        # 50,000 x 57,344 B = 2.8672 GB: Curvine 2.8672e9 / 1.971e9 B/s = 1.455 s < 5 s to
        # recompute; 100 x 100,000 x 57,344 B = 0.573 TB fits 2 x 400 GiB = 0.859 TB
        ("qwen2-7b", {}, "curvine",
         "a Curvine read (1.455 s) beats recomputing (5.000 s) and the working set (0.573 TB) "
         "fits the NVMe pool (0.859 TB)"),
        # 500 x 200,000 x 327,680 B = 32.768 TB > 0.859 TB; FSx at 31,200 GiB is capped by the
        # 12.5 GB/s client: 0.0005 + 32.768e9 / 12.5e9 = 2.622 s < 100,000 / 5,000 = 20 s
        ("llama-3.1-70b", dict(prompt_tokens=100_000, sessions=500, context_tokens=200_000,
                               fsx_throughput_mb_per_tib=1000, gpus=4, prefill_tokens_per_s=5_000),
         "fsx_lustre",
         "an FSx read (2.622 s) beats recomputing (20.000 s) and the working set (32.768 TB) "
         "exceeds the NVMe pool (0.859 TB); size it at >= 31200 GiB"),
        # recompute 50,000 / 50,000 = 1 s: Curvine (1.455 s) loses, FSx 14,400 GiB x 1000 MB/s/TiB
        # capped at 12.5 GB/s: 0.0005 + 2.8672e9 / 12.5e9 = 0.230 s wins
        ("qwen2-7b", dict(prefill_tokens_per_s=50_000, fsx_capacity_gib=14_400,
                          fsx_throughput_mb_per_tib=1000),
         "fsx_lustre",
         "an FSx read (0.230 s) beats recomputing (1.000 s) and a Curvine read does not beat "
         "recomputing; size it at >= 1200 GiB"),
        # a 100 GiB pool holds 107.37 / 573.44 GB = 19% of the working set; FSx 1200 GiB x
        # 125 MB/s/TiB = 146.5 MB/s: 0.0005 + 2.8672e9 / 146.48e6 = 19.574 s > 5 s
        ("qwen2-7b", dict(curvine_pool_bytes=100 * GIB, fsx_throughput_mb_per_tib=125),
         "curvine",
         "a Curvine read (1.455 s) beats recomputing (5.000 s) and an FSx read (19.574 s at "
         "1200 GiB x 125 MB/s/TiB) does not; the NVMe pool holds 19% of the working set (the "
         "evictor keeps the newest)"),
        # 500 x 131,072 B = 65.5 MB: Curvine 0.033 s, FSx 0.0005 + 65.536e6 / 146.48e6 = 0.448 s,
        # both slower than 500 / 20,000 = 0.025 s
        ("llama-3.1-8b", dict(prompt_tokens=500, sessions=10, context_tokens=500,
                              fsx_throughput_mb_per_tib=125, prefill_tokens_per_s=20_000),
         "none",
         "recomputing 500 tokens (0.025 s) is as fast as reading them back from a shared tier "
         "(Curvine 0.033 s, FSx 0.448 s at 0.15 GB/s); the storage post: under ~10,000 tokens "
         "tiering rarely pays off"),
        # 9,999 x 131,072 B = 1.3106 GB: FSx 0.0005 + 1.3106e9 / 146.48e6 = 8.947 s; 9,999
        # tokens are still under the storage post's line
        ("llama-3.1-8b", dict(prompt_tokens=9_999, sessions=10, context_tokens=500,
                              fsx_throughput_mb_per_tib=125, prefill_tokens_per_s=1e9),
         "none",
         "recomputing 9,999 tokens (0.000 s) is as fast as reading them back from a shared tier "
         "(Curvine 0.665 s, FSx 8.947 s at 0.15 GB/s); the storage post: under ~10,000 tokens "
         "tiering rarely pays off"),
        # 10,000 tokens: on the line, no remark
        ("llama-3.1-8b", dict(prompt_tokens=10_000, sessions=10, context_tokens=500,
                              fsx_throughput_mb_per_tib=125, prefill_tokens_per_s=1e9),
         "none",
         "recomputing 10,000 tokens (0.000 s) is as fast as reading them back from a shared tier "
         "(Curvine 0.665 s, FSx 8.948 s at 0.15 GB/s)"),
    ],
)  # fmt: skip
def test_the_recommendation_and_its_reason(
    preset: str, change: dict[str, Any], recommendation: str, reason: str
) -> None:
    advice = tier_advice(PRESETS[preset], **{**QWEN_50K, **change})  # type: ignore[arg-type]
    assert (advice.recommendation, advice.reason) == (recommendation, reason)


def test_the_prefill_estimate_and_the_advice_as_json() -> None:
    advice = tier_advice(
        PRESETS["llama-3.1-8b"], prompt_tokens=10_000, sessions=10, context_tokens=500,
        curvine_pool_bytes=2 * 400 * GIB, fsx_capacity_gib=1200, fsx_throughput_mb_per_tib=125,
        gpus=2, params=10**10, kv_dtype="fp8",
    )  # fmt: skip
    # 2 GPUs x 100e12 FLOP/s / (2 x 1e10) = 10,000 tokens/s: 1 s for 10,000 tokens.
    # fp8: 2 x 32 x 8 x 128 x 1 B = 65,536 B/token; 10,000 tokens = 655,360,000 B.
    data = advice.as_dict()
    reads = data.pop("reads")
    assert [(r["tier"], r["beats_recompute"]) for r in reads] == [
        ("l1_dram", True), ("curvine", True), ("fsx_lustre", False), ("s3", False)]  # fmt: skip
    # l1: 10 us + 655.36e6 / 200e9; FSx 1200 GiB x 125 MB/s/TiB = 146,484,375 B/s
    assert [r["seconds"] for r in reads] == pytest.approx(
        [10e-6 + 655.36e6 / 200e9, 655.36e6 / (0.1028 * GIB / 0.056),
         0.0005 + 655.36e6 / 146_484_375, 1.0 + 655.36e6 / 146_484_375]
    )  # fmt: skip
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
    [(0, 1200), (1200 * GIB, 1200), (1200 * GIB + 1, 2400), (2400 * GIB, 2400),
     (2400 * GIB + 1, 4800), (4800 * GIB, 4800), (4801 * GIB, 7200)],
)  # fmt: skip
def test_fsx_capacity_is_1200_gib_then_steps_of_2400(nbytes: int, gib: int) -> None:
    assert fsx_capacity_for(nbytes) == gib


# 1 layer x 1 KV head x head dim 64: 2 x 64 x 2 B = 256 B per token, so byte counts come out round.
ONE_LAYER = {"num_hidden_layers": 1, "num_attention_heads": 1, "hidden_size": 64}


def test_a_working_set_exactly_the_pool_size_fits_it() -> None:
    # 1,953,125 tokens x 256 B = 500,000,000 B = 0.0005 TB, shown rounded up as 0.001 TB
    a = tier_advice(
        ONE_LAYER, prompt_tokens=1_000, sessions=1, context_tokens=1_953_125,
        curvine_pool_bytes=500_000_000, fsx_capacity_gib=1200, fsx_throughput_mb_per_tib=125,
        gpus=1, prefill_tokens_per_s=1_000,
    )  # fmt: skip
    assert (a.recommendation, a.reason) == (
        "curvine",
        "a Curvine read (0.000 s) beats recomputing (1.000 s) and the working set (0.001 TB) "
        "fits the NVMe pool (0.001 TB)",
    )


def test_a_read_as_slow_as_recomputing_does_not_beat_it() -> None:
    # 48,828,125 tokens x 256 B = 12.5e9 B; FSx 1200 GiB x 12,000 MB/s/TiB is capped at the
    # 12.5 GB/s client link: S3 1 s + 1 s = 2 s, exactly 48,828,125 / 24,414,062.5 tokens/s
    a = tier_advice(
        ONE_LAYER, prompt_tokens=48_828_125, sessions=1, context_tokens=48_828_125,
        curvine_pool_bytes=12_500_000_000, fsx_capacity_gib=1200, fsx_throughput_mb_per_tib=12_000,
        gpus=1,
        prefill_tokens_per_s=24_414_062.5,
    )  # fmt: skip
    assert a.recompute_seconds == 2.0
    assert [(r.tier, r.beats_recompute) for r in a.reads] == [
        ("l1_dram", True), ("curvine", False), ("fsx_lustre", True), ("s3", False)]  # fmt: skip
    assert [r.seconds for r in a.reads if r.tier != "curvine"] == [0.06251, 1.0005, 2.0]
    # the working set is the pool's size: it is Curvine's speed, not its room, that rules it out
    assert a.reason == (
        "an FSx read (1.000 s) beats recomputing (2.000 s) and a Curvine read does not beat "
        "recomputing; size it at >= 1200 GiB"
    )


def test_a_working_set_over_the_pool_is_shown_in_tb_rounded_half_up() -> None:
    # 9,765,625 tokens x 256 B = 2.5e9 B = 0.0025 TB (shown 0.003) over a 0.0015 TB pool (0.002);
    # FSx: 0.0005 + 256,000 B / 146,484,375 B/s = 0.002 s, against 1,000 / 100 = 10 s
    a = tier_advice(
        ONE_LAYER, prompt_tokens=1_000, sessions=1, context_tokens=9_765_625,
        curvine_pool_bytes=1_500_000_000, fsx_capacity_gib=1200, fsx_throughput_mb_per_tib=125,
        gpus=1, prefill_tokens_per_s=100,
    )  # fmt: skip
    assert (a.recommendation, a.reason) == (
        "fsx_lustre",
        "an FSx read (0.002 s) beats recomputing (10.000 s) and the working set (0.003 TB) "
        "exceeds the NVMe pool (0.002 TB); size it at >= 1200 GiB",
    )


def test_the_fsx_rate_in_the_none_reason_is_rounded_half_up() -> None:
    # 5,120 GiB = 5 TiB x 27 MB/s/TiB = 135,000,000 B/s, shown as 0.14 GB/s; 1,000 tokens
    # x 256 B = 256,000 B: FSx 0.0005 + 0.0019 = 0.002 s, slower than 1,000 / 1e9 tokens/s
    a = tier_advice(
        ONE_LAYER, prompt_tokens=1_000, sessions=1, context_tokens=1_000, curvine_pool_bytes=0,
        fsx_capacity_gib=5120, fsx_throughput_mb_per_tib=27, gpus=1, prefill_tokens_per_s=1e9,
    )  # fmt: skip
    assert a.reason == (
        "recomputing 1,000 tokens (0.000 s) is as fast as reading them back from a shared tier "
        "(Curvine 0.000 s, FSx 0.002 s at 0.14 GB/s); the storage post: under ~10,000 tokens "
        "tiering rarely pays off"
    )
