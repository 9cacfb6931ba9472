"""The sizing model: KV bytes per token, parameters and weights, and how many tokens L0, L1 and L2
hold, against the seed's numbers and inputs worked by hand in the comments, with the flags at their
limits. Pure functions; no double."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scripts.lib.sizing import (
    GIB,
    PRESETS,
    estimate_params,
    kv_bytes_per_token,
    load_model_config,
    size_model,
)
from tests.support.sizing import QWEN2_7B_CONFIG, SMALL


def test_qwen2_7b_matches_the_seed() -> None:
    per_token = kv_bytes_per_token(QWEN2_7B_CONFIG)
    assert per_token == 57_344
    assert round(per_token * 1925 / GIB, 4) == 0.1028  # the seed's "Stored 1925 ... 0.1028 gb"


def test_llama_405b() -> None:
    assert kv_bytes_per_token(PRESETS["llama-3.1-405b"]) == 516_096


def test_mla_uses_the_latent() -> None:
    # DeepSeek-V3: 61 layers x (512 + 64) x 2 bytes, not 2 x heads x head_dim.
    assert kv_bytes_per_token(PRESETS["deepseek-v3"]) == 61 * 576 * 2


@pytest.mark.parametrize(
    ("preset", "billions"),
    [
        ("qwen2-7b", 7.6),
        ("llama-3.1-8b", 8.0),
        ("llama-3.1-70b", 70.6),
        ("llama-3.1-405b", 405.8),
        ("deepseek-v3", 671.0),
    ],
)
def test_params_estimated_from_the_architecture(preset: str, billions: float) -> None:
    assert estimate_params(PRESETS[preset]) / 1e9 == pytest.approx(billions, abs=0.1)


def test_text_config_of_multimodal_models(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(
        json.dumps(
            {
                "model_type": "llava",
                "torch_dtype": "float16",
                "text_config": QWEN2_7B_CONFIG | {"torch_dtype": None},
            }
        )
    )
    _, text = load_model_config(str(path))
    assert kv_bytes_per_token({**text, "torch_dtype": "float16"}) == 57_344


@pytest.mark.parametrize("utilization", [0.5, 0.9])
def test_l0_is_the_gpu_memory_vllm_may_use_minus_the_weights(utilization: float) -> None:
    """vLLM takes gpu_memory_utilization of each GPU; L0 is what is left after the weights and
    the per-GPU overhead, at the configured utilization."""
    report = size_model(
        "qwen2-7b",
        QWEN2_7B_CONFIG,
        instance_type="ml.g6e.4xlarge",
        gpus=2,
        gpu_memory_gib=48,
        instance_memory_gib=128,
        gpu_nodes=2,
        tiered_storage_percent=20,
        curvine_pool_bytes=400 * 2 * GIB,
        params=7_000_000_000,
        weight_dtype="bfloat16",
        gpu_memory_utilization=utilization,
        overhead_gib_per_gpu=2.0,
    )
    want = int(2 * (48 * utilization - 2.0) * GIB - 7_000_000_000 * 2)
    (l0,) = [t for t in report.tiers if t.name == "L0"]
    assert l0.bytes == want
    assert l0.tokens == want // kv_bytes_per_token(QWEN2_7B_CONFIG)


TINY = {
    "hidden_size": 8,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "vocab_size": 10,
    "intermediate_size": 16,
    "num_key_value_heads": 1,
}
MLA = {"kv_lora_rank": 2, "qk_rope_head_dim": 1}


@pytest.mark.parametrize(
    ("extra", "params"),
    [
        ({}, 1312),  # embed 10*8*2 + 2 x attn (2*8*2*4 + 2*8*1*4) + 2 x mlp 3*8*16
        ({"tie_word_embeddings": True}, 1232),  # embed counted once
        ({"head_dim": 6}, 1504),  # attn 2*8*2*6 + 2*8*1*6
        ({"num_key_value_heads": None}, 1440),  # kv heads = heads
        (
            {
                "num_local_experts": 4,
                "moe_intermediate_size": 4,
                "n_shared_experts": 1,
                "first_k_dense_replace": 1,
            },
            1440,
        ),  # 1 dense mlp + 1 x (3*8*4*5 + router 8*4)
        ({"n_routed_experts": 2}, 2112),  # 2 x (3*8*16*2 + router 8*2)
        ({**MLA, "qk_nope_head_dim": 3, "v_head_dim": 5, "q_lora_rank": 4}, 1328),
        (MLA, 11248),  # no q LoRA; nope and v head dims default to 128
    ],
)
def test_params_are_counted_exactly_on_tiny_architectures(
    extra: dict[str, Any], params: int
) -> None:
    """Worked by hand (comments): embeddings, attention (GQA, head_dim, MLA) and MLP or MoE."""
    cfg = {k: v for k, v in {**TINY, **extra}.items() if v is not None}
    assert estimate_params(cfg) == params


SIZING: dict[str, Any] = {
    "instance_type": "ml.g6e.4xlarge",
    "instance_memory_gib": 128,
    "gpu_nodes": 2,
    "tiered_storage_percent": 20,
    "curvine_pool_bytes": 400 * 2 * GIB,
}


def test_the_models_own_dtype_sizes_weights_and_kv_unless_overridden() -> None:
    """Without a weight or KV dtype given, the config's torch_dtype counts (a float32 model
    takes 4 bytes a parameter), not the bfloat16 default."""
    cfg = {**QWEN2_7B_CONFIG, "torch_dtype": "float32"}
    own = size_model("q", cfg, gpus=2, gpu_memory_gib=48, params=10**9, **SIZING)
    assert (own.weight_bytes, own.kv_dtype_bytes) == (4 * 10**9, 4)
    given = size_model(
        "q",
        cfg,
        gpus=2,
        gpu_memory_gib=48,
        params=10**9,
        weight_dtype="bf16",
        kv_dtype="fp8",
        **SIZING,
    )
    assert (given.weight_bytes, given.kv_dtype_bytes) == (2 * 10**9, 1)


@pytest.mark.parametrize(
    ("left", "fits", "flag"), [(1, True, "l0_small"), (0, False, "model_does_not_fit")]
)
def test_a_model_fits_while_one_byte_is_left_after_its_weights(
    left: int, fits: bool, flag: str
) -> None:
    """The boundary of `fits`: usable GPU memory (here 1 x 4 GiB x 0.5, no overhead) minus
    the weights (1 byte a parameter in fp8). One byte left fits, with too small an L0."""
    report = size_model(
        "q",
        QWEN2_7B_CONFIG,
        gpus=1,
        gpu_memory_gib=4,
        gpu_memory_utilization=0.5,
        overhead_gib_per_gpu=0,
        params=2 * GIB - left,
        weight_dtype="fp8",
        **SIZING,
    )
    assert report.fits is fits
    assert [f.split(":")[0] for f in report.flags] == [flag]


def test_a_missing_head_dim_is_hidden_size_over_heads_rounded_down() -> None:
    """As transformers derives it: hidden_size // num_attention_heads (10 // 4 = 2)."""
    cfg = {
        "hidden_size": 10,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "num_hidden_layers": 1,
        "vocab_size": 3,
        "intermediate_size": 5,
    }
    assert kv_bytes_per_token(cfg) == kv_bytes_per_token({**cfg, "head_dim": 2}) == 2 * 2 * 2
    assert estimate_params(cfg) == estimate_params({**cfg, "head_dim": 2})


def _size(**kw: Any) -> Any:
    args: dict[str, Any] = dict(
        instance_type="ml.test",
        gpus=2,
        gpu_memory_gib=24,
        instance_memory_gib=64,
        gpu_nodes=3,
        tiered_storage_percent=25,
        curvine_pool_bytes=100 * 3 * GIB,
        params=1_000_000_000,
        l1_gib=8,
    )
    return size_model("small", SMALL, **{**args, **kw})


def test_tiers_of_a_worked_example() -> None:
    report = _size(gpu_memory_utilization=0.75, overhead_gib_per_gpu=2.0)
    # L0: 2 GPUs x (24 GiB x 0.75 - 2 GiB) = 32 GiB = 34,359,738,368 B, minus 1e9 params x 2 B
    #     = 32,359,738,368 B; / 2,048 B per token = 15,800,653 tokens
    # L1: the Pod's 8 GiB = 8,589,934,592 B = 4,194,304 tokens
    # L2: 100 GiB x 3 nodes = 322,122,547,200 B = 157,286,400 tokens
    # Tiered Storage: 64 GiB x 25% = 16 GiB = 17,179,869,184 B = 8,388,608 tokens (not L1)
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
            {
                "name": "L0",
                "bytes": 32_359_738_368,
                "tokens": 15_800_653,
                "scope": "per replica (GPU)",
            },
            {
                "name": "L1",
                "bytes": 8_589_934_592,
                "tokens": 4_194_304,
                "scope": "per replica (LMCache CPU cache in the Pod's memory)",
            },
            {
                "name": "L2",
                "bytes": 322_122_547_200,
                "tokens": 157_286_400,
                "scope": "shared by 3 nodes (Curvine NVMe)",
            },
            {
                "name": "L2 tieredstorage",
                "bytes": 17_179_869_184,
                "tokens": 8_388_608,
                "scope": "per node (Tiered Storage reservation; serves endpoints on tieredstorage "
                "only)",
            },
        ],
        "flags": [],
        "fits": True,
        "weight_gib": 1.86,  # 2e9 / 2^30 = 1.8626
        "tokens_per_tier": {
            "L0": 15_800_653,
            "L1": 4_194_304,
            "L2": 157_286_400,
            "L2 tieredstorage": 8_388_608,
        },
    }


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
        9_936_896,
        1024,
        1,
    )


def test_mla_is_reported_as_such() -> None:
    report = size_model(
        "deepseek-v3",
        PRESETS["deepseek-v3"],
        instance_type="ml.p5.48xlarge",
        gpus=8,
        gpu_memory_gib=80,
        instance_memory_gib=2048,
        gpu_nodes=2,
        tiered_storage_percent=0,
        curvine_pool_bytes=0,
    )
    assert report.attention == "mla" and report.kv_bytes_per_token == 61 * 576 * 2
    assert [(t.bytes, t.tokens) for t in report.tiers[1:]] == [(0, 0), (0, 0), (0, 0)]


# One GPU of 4 GiB, all usable (utilization 1, no overhead): 4,294,967,296 B. With 2,048 B per
# token, 4,096 tokens are 8,388,608 B, so 2 x params = 4,286,578,688 leaves exactly 4,096.
EXACT = dict(gpus=1, gpu_memory_gib=4, gpu_memory_utilization=1.0, overhead_gib_per_gpu=0.0)
SMALL_L0 = "l0_small: fewer than 4,096 tokens of KV cache fit on the GPU"


@pytest.mark.parametrize(
    ("params", "fits", "l0_tokens", "flags"),
    [
        (2_143_289_344, True, 4096, []),
        (2_143_289_345, True, 4095, [SMALL_L0]),  # 8,388,606 B: one token short
        (2_147_482_624, True, 1, [SMALL_L0]),  # 2,048 B left
        (
            2_147_483_648,
            False,
            0,
            [  # nothing left
                "model_does_not_fit: weights 4.0 GiB exceed the usable 4.0 GiB of 1 x 4 GiB GPU on "
                "ml.test"
            ],
        ),
        (
            3 * GIB,
            False,
            0,
            [  # 6 GiB of weights; L0 is never negative
                "model_does_not_fit: weights 6.0 GiB exceed the usable 4.0 GiB of 1 x 4 GiB GPU on "
                "ml.test"
            ],
        ),
    ],
)
def test_flags_at_their_limits(params: int, fits: bool, l0_tokens: int, flags: list[str]) -> None:
    report = _size(params=params, **EXACT)
    l0 = report.tiers[0]
    assert (report.fits, l0.tokens, report.flags) == (fits, l0_tokens, flags)
    assert l0.bytes == max(4 * GIB - 2 * params, 0)
