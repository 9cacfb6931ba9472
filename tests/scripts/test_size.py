"""`size`: KV arithmetic against the seed's numbers. No double needed (pure functions and the
CLI run in-process with typer's CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scripts.cli import app
from scripts.lib import runtime
from scripts.lib.sizing import GIB, PRESETS, estimate_params, kv_bytes_per_token, load_model_config

runner = CliRunner()

QWEN2_7B_CONFIG = {
    "architectures": ["Qwen2ForCausalLM"],
    "hidden_size": 3584,
    "intermediate_size": 18944,
    "max_position_embeddings": 131072,
    "model_type": "qwen2",
    "num_attention_heads": 28,
    "num_hidden_layers": 28,
    "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 152064,
}


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


def test_cli_json_from_a_config_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN2_7B_CONFIG))
    result = runner.invoke(app, ["size", str(path), "--json", "--l2-worker-gib", "400"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # exactly one JSON object
    assert data["kv_bytes_per_token"] == 57_344
    assert data["params_source"] == "architecture"
    tiers = {t["name"]: t for t in data["tiers"]}
    # dev.yaml: ml.g6e.4xlarge (128 GiB memory) at 20% Tiered Storage -> 25.6 GiB of L1.
    assert tiers["L1"]["bytes"] == int(128 * 0.2 * GIB)
    assert tiers["L1"]["tokens"] == int(128 * 0.2 * GIB) // 57_344
    # L2: worker capacity x 2 GPU nodes.
    assert tiers["L2"]["bytes"] == 400 * GIB * 2
    assert tiers["L2"]["tokens"] == 400 * GIB * 2 // 57_344
    assert data["fits"] is True and data["flags"] == []


def test_cli_params_override_and_flags() -> None:
    result = runner.invoke(
        app, ["size", "llama-3.1-70b", "--json", "--params", "7.0e10", "--prompt-tokens", "600"]
    )
    data = json.loads(result.stdout)
    assert data["params"] == 70_000_000_000 and data["params_source"] == "--params"
    assert not data["fits"]  # 140 GB of weights on one 48 GB L40S
    assert any(f.startswith("model_does_not_fit") for f in data["flags"])
    assert any(f.startswith("l2_does_not_pay_off") for f in data["flags"])


def test_cli_bad_input_exit_codes(tmp_path: Path) -> None:
    assert runner.invoke(app, ["size", str(tmp_path / "missing.json")]).exit_code == 2
    assert runner.invoke(app, ["size", "qwen2-7b", "--env", "nosuchenv"]).exit_code == 2


@pytest.mark.parametrize(
    ("kvcache", "args", "worker_gib"),
    [
        # kvcache.curvine.worker.capacity_gib
        ({"curvine": {"worker": {"capacity_gib": 123}}}, [], 123),
        # the override wins
        ({"curvine": {"worker": {"capacity_gib": 123}}}, ["--l2-worker-gib", "50"], 50),
        # no Curvine, no L2 pool
        ({"curvine": {"enabled": False}, "endpoints": [{"enable_l2_cache": False}]}, [], 0),
    ],
)
def test_l2_worker_capacity_comes_from_config(
    monkeypatch: pytest.MonkeyPatch, kvcache: dict[str, Any], args: list[str], worker_gib: int
) -> None:
    from tests.scripts.conftest import make_cfg

    cfg = make_cfg(kvcache=kvcache)
    monkeypatch.setattr(runtime, "load_config", lambda env: cfg)
    result = runner.invoke(app, ["size", "qwen2-7b", "--json", *args])
    assert result.exit_code == 0, result.output
    tiers = {t["name"]: t for t in json.loads(result.stdout)["tiers"]}
    assert tiers["L2"]["bytes"] == worker_gib * GIB * cfg.hyperpod.gpu_group.instance_count


@pytest.mark.parametrize("utilization", [0.5, 0.9])
def test_l0_is_the_gpu_memory_vllm_may_use_minus_the_weights(utilization: float) -> None:
    """vLLM takes gpu_memory_utilization of each GPU; L0 is what is left after the weights and
    the per-GPU overhead (issue 17: sizing once ignored the utilization)."""
    from scripts.lib.sizing import size_model

    report = size_model(
        "qwen2-7b", QWEN2_7B_CONFIG, instance_type="ml.g6e.4xlarge", gpus=2,
        gpu_memory_gib=48, instance_memory_gib=128, gpu_nodes=2, tiered_storage_percent=20,
        l2_worker_gib=400, params=7_000_000_000, weight_dtype="bfloat16",
        gpu_memory_utilization=utilization, overhead_gib_per_gpu=2.0,
    )  # fmt: skip
    want = int(2 * (48 * utilization - 2.0) * GIB - 7_000_000_000 * 2)
    (l0,) = [t for t in report.tiers if t.name == "L0"]
    assert l0.bytes == want
    assert l0.tokens == want // kv_bytes_per_token(QWEN2_7B_CONFIG)


TINY = {"hidden_size": 8, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10,
        "intermediate_size": 16, "num_key_value_heads": 1}  # fmt: skip
MLA = {"kv_lora_rank": 2, "qk_rope_head_dim": 1}


@pytest.mark.parametrize(("extra", "params"), [
    ({}, 1312),  # embed 10*8*2 + 2 x attn (2*8*2*4 + 2*8*1*4) + 2 x mlp 3*8*16
    ({"tie_word_embeddings": True}, 1232),  # embed counted once
    ({"head_dim": 6}, 1504),  # attn 2*8*2*6 + 2*8*1*6
    ({"num_key_value_heads": None}, 1440),  # kv heads = heads
    ({"num_local_experts": 4, "moe_intermediate_size": 4, "n_shared_experts": 1,
      "first_k_dense_replace": 1}, 1440),  # 1 dense mlp + 1 x (3*8*4*5 + router 8*4)
    ({"n_routed_experts": 2}, 2112),  # 2 x (3*8*16*2 + router 8*2)
    ({**MLA, "qk_nope_head_dim": 3, "v_head_dim": 5, "q_lora_rank": 4}, 1328),
    (MLA, 11248),  # no q LoRA; nope and v head dims default to 128
])  # fmt: skip
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
    "l2_worker_gib": 400,
}


def test_the_models_own_dtype_sizes_weights_and_kv_unless_overridden() -> None:
    """Without a weight or KV dtype given, the config's torch_dtype counts (a float32 model
    takes 4 bytes a parameter), not the bfloat16 default."""
    from scripts.lib.sizing import size_model

    cfg = {**QWEN2_7B_CONFIG, "torch_dtype": "float32"}
    own = size_model("q", cfg, gpus=2, gpu_memory_gib=48, params=10**9, **SIZING)
    assert (own.weight_bytes, own.kv_dtype_bytes) == (4 * 10**9, 4)
    given = size_model("q", cfg, gpus=2, gpu_memory_gib=48, params=10**9, weight_dtype="bf16",
                       kv_dtype="fp8", **SIZING)  # fmt: skip
    assert (given.weight_bytes, given.kv_dtype_bytes) == (2 * 10**9, 1)


@pytest.mark.parametrize(
    ("left", "fits", "flag"), [(1, True, "l0_small"), (0, False, "model_does_not_fit")]
)
def test_a_model_fits_while_one_byte_is_left_after_its_weights(
    left: int, fits: bool, flag: str
) -> None:
    """The boundary of `fits`: usable GPU memory (here 1 x 4 GiB x 0.5, no overhead) minus
    the weights (1 byte a parameter in fp8). One byte left fits, with too small an L0."""
    from scripts.lib.sizing import size_model

    report = size_model("q", QWEN2_7B_CONFIG, gpus=1, gpu_memory_gib=4,
                        gpu_memory_utilization=0.5, overhead_gib_per_gpu=0,
                        params=2 * GIB - left, weight_dtype="fp8", **SIZING)  # fmt: skip
    assert report.fits is fits
    assert [f.split(":")[0] for f in report.flags] == [flag]


def test_a_missing_head_dim_is_hidden_size_over_heads_rounded_down() -> None:
    """As transformers derives it: hidden_size // num_attention_heads (10 // 4 = 2)."""
    cfg = {"hidden_size": 10, "num_attention_heads": 4, "num_key_value_heads": 1,
           "num_hidden_layers": 1, "vocab_size": 3, "intermediate_size": 5}  # fmt: skip
    assert kv_bytes_per_token(cfg) == kv_bytes_per_token({**cfg, "head_dim": 2}) == 2 * 2 * 2
    assert estimate_params(cfg) == estimate_params({**cfg, "head_dim": 2})
