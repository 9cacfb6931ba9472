"""KV-cache arithmetic: bytes per token, weight memory and how many tokens each tier holds.

bytes/token = 2 (K and V) x layers x KV heads x head dim x bytes per element; MLA models
(DeepSeek-V2/V3) cache one latent per layer instead: layers x (kv_lora_rank + qk_rope_head_dim)
x bytes per element.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

GIB = 1024**3
GB = 1000**3
DTYPE_BYTES = {
    "float32": 4,
    "fp32": 4,
    "float16": 2,
    "fp16": 2,
    "half": 2,
    "bfloat16": 2,
    "bf16": 2,
    "float8": 1,
    "fp8": 1,
    "float8_e4m3fn": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
    "int8": 1,
    "int4": 0.5,
}
# Architecture fields of a few well-known models (from their Hugging Face config.json).
PRESETS: dict[str, dict[str, Any]] = {
    "qwen2-7b": {
        "model_type": "qwen2",
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "vocab_size": 152064,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
    "llama-3.1-8b": {
        "model_type": "llama",
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
    "llama-3.1-70b": {
        "model_type": "llama",
        "num_hidden_layers": 80,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "hidden_size": 8192,
        "intermediate_size": 28672,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
    "llama-3.1-405b": {
        "model_type": "llama",
        "num_hidden_layers": 126,
        "num_attention_heads": 128,
        "num_key_value_heads": 8,
        "hidden_size": 16384,
        "intermediate_size": 53248,
        "vocab_size": 128256,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
    "mistral-7b": {
        "model_type": "mistral",
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "vocab_size": 32768,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
    "deepseek-v3": {
        "model_type": "deepseek_v3",
        "num_hidden_layers": 61,
        "num_attention_heads": 128,
        "num_key_value_heads": 128,
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "moe_intermediate_size": 2048,
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "first_k_dense_replace": 3,
        "kv_lora_rank": 512,
        "q_lora_rank": 1536,
        "qk_rope_head_dim": 64,
        "qk_nope_head_dim": 128,
        "v_head_dim": 128,
        "vocab_size": 129280,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    },
}


class SizingError(ValueError):
    """config.json lacks a field the arithmetic needs (message names it)."""


# Architecture fields the arithmetic reads: each must be a whole number in this range when present.
INT_FIELDS = (
    "num_hidden_layers",
    "num_attention_heads",
    "num_key_value_heads",
    "hidden_size",
    "head_dim",
    "intermediate_size",
    "moe_intermediate_size",
    "vocab_size",
    "kv_lora_rank",
    "q_lora_rank",
    "qk_rope_head_dim",
    "qk_nope_head_dim",
    "v_head_dim",
    "n_routed_experts",
    "num_local_experts",
    "n_shared_experts",
    "first_k_dense_replace",
)
MAX_FIELD = 10**7  # far above any real model's dimension; keeps the arithmetic finite


def load_model_config(source: str) -> tuple[str, dict[str, Any]]:
    """A preset name or a path to a Hugging Face config.json; returns (label, text config)."""
    key = source.lower()
    if key in PRESETS:
        return key, dict(PRESETS[key])
    path = Path(source)
    if path.is_dir():
        path = path / "config.json"
    if not path.is_file():
        raise SizingError(f"{source}: not a file and not a preset ({', '.join(PRESETS)})")
    try:
        raw = json.loads(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise SizingError(f"{path}: not a text file; pass a Hugging Face config.json") from None
    except ValueError as exc:  # JSONDecodeError, and integers longer than Python converts
        raise SizingError(
            f"{path}: not valid JSON ({exc}); pass a Hugging Face config.json"
        ) from None
    if not isinstance(raw, dict):
        raise SizingError(
            f"{path}: a JSON {type(raw).__name__}, not an object; pass a Hugging Face config.json"
        )
    # Multimodal configs keep the language model under text_config.
    text = raw.get("text_config") or raw
    if not isinstance(text, dict):
        raise SizingError(f"{path}: text_config is a {type(text).__name__}, not an object")
    if text.get("torch_dtype") is None and raw.get("torch_dtype") is not None:
        text = {**text, "torch_dtype": raw["torch_dtype"]}
    _validate(str(path), text)
    return str(path), text


def _validate(label: str, cfg: dict[str, Any]) -> None:
    for key in INT_FIELDS:
        value = cfg.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_FIELD:
            raise SizingError(
                f"{label}: {key} is {str(value)[:40]!r}; expected a whole number from 0 to "
                f"{MAX_FIELD:,}"
            )
    dtype = cfg.get("torch_dtype")
    if dtype is not None and not isinstance(dtype, str):
        raise SizingError(f"{label}: torch_dtype is {str(dtype)[:40]!r}; expected e.g. bfloat16")


def _req(cfg: dict[str, Any], key: str) -> int:
    value = cfg.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SizingError(f"config.json has no positive integer {key!r}")
    return value


def dtype_bytes(name: str | None, default: str = "bfloat16") -> float:
    key = (name or default).lower().removeprefix("torch.")
    if key not in DTYPE_BYTES:
        raise SizingError(f"unknown dtype {name!r}; known: {', '.join(sorted(DTYPE_BYTES))}")
    return DTYPE_BYTES[key]


def is_mla(cfg: dict[str, Any]) -> bool:
    return bool(cfg.get("kv_lora_rank")) and bool(cfg.get("qk_rope_head_dim"))


def kv_bytes_per_token(cfg: dict[str, Any], kv_dtype: str | None = None) -> int:
    layers = _req(cfg, "num_hidden_layers")
    elem = dtype_bytes(kv_dtype or cfg.get("torch_dtype"))
    if is_mla(cfg):
        return int(layers * (cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]) * elem)
    heads = _req(cfg, "num_attention_heads")
    kv_heads = cfg.get("num_key_value_heads") or heads
    head_dim = cfg.get("head_dim") or _req(cfg, "hidden_size") // heads
    return int(2 * layers * kv_heads * head_dim * elem)


def estimate_params(cfg: dict[str, Any]) -> int:
    """Parameter count from the architecture (embeddings, attention, gated MLP or MoE)."""
    hidden = _req(cfg, "hidden_size")
    layers = _req(cfg, "num_hidden_layers")
    heads = _req(cfg, "num_attention_heads")
    vocab = _req(cfg, "vocab_size")
    embed = vocab * hidden * (1 if cfg.get("tie_word_embeddings") else 2)
    if is_mla(cfg):
        rope, nope = cfg["qk_rope_head_dim"], cfg.get("qk_nope_head_dim", 128)
        v_dim, kv_rank = cfg.get("v_head_dim", 128), cfg["kv_lora_rank"]
        q_rank = cfg.get("q_lora_rank")
        q = (
            hidden * q_rank + q_rank * heads * (nope + rope)
            if q_rank
            else hidden * heads * (nope + rope)
        )
        attn = (
            q
            + hidden * (kv_rank + rope)
            + kv_rank * heads * (nope + v_dim)
            + heads * v_dim * hidden
        )
    else:
        kv_heads = cfg.get("num_key_value_heads") or heads
        head_dim = cfg.get("head_dim") or hidden // heads
        attn = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    dense_mlp = 3 * hidden * _req(cfg, "intermediate_size")
    experts = cfg.get("n_routed_experts") or cfg.get("num_local_experts") or 0
    if experts:
        moe_inter = cfg.get("moe_intermediate_size") or cfg["intermediate_size"]
        shared = cfg.get("n_shared_experts") or 0
        moe_mlp = 3 * hidden * moe_inter * (experts + shared) + hidden * experts  # + router
        dense_layers = cfg.get("first_k_dense_replace", 0)
        mlp_total = dense_layers * dense_mlp + (layers - dense_layers) * moe_mlp
    else:
        mlp_total = layers * dense_mlp
    return int(embed + layers * attn + mlp_total)


@dataclass
class Tier:
    name: str
    bytes: int
    tokens: int
    scope: str


@dataclass
class SizeReport:
    model: str
    attention: str
    kv_bytes_per_token: int
    kv_dtype_bytes: float
    params: int
    params_source: str
    weight_bytes: int
    instance_type: str
    gpus_per_node: int
    gpu_nodes: int
    tiers: list[Tier]
    flags: list[str] = field(default_factory=list)
    fits: bool = True

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["weight_gib"] = round(self.weight_bytes / GIB, 2)
        data["tokens_per_tier"] = {t.name: t.tokens for t in self.tiers}
        return data


def size_model(
    label: str,
    cfg: dict[str, Any],
    *,
    instance_type: str,
    gpus: int,
    gpu_memory_gib: float,
    instance_memory_gib: float,
    gpu_nodes: int,
    tiered_storage_percent: int,
    curvine_pool_bytes: int,
    l1_gib: float = 0.0,
    params: int | None = None,
    weight_dtype: str | None = None,
    kv_dtype: str | None = None,
    gpu_memory_utilization: float = 0.9,
    overhead_gib_per_gpu: float = 2.0,
) -> SizeReport:
    """Tokens each tier holds. ``l1_gib``: LMCache's CPU cache of one replica
    (``EndpointConfig.l1_cache_gib``); ``tiered_storage_percent``: the node memory Tiered Storage
    reserves, the L2 of endpoints on tieredstorage (not L1). Whether a prompt is worth reading
    back is ``scripts.lib.tier_advice``'s one comparison."""
    per_token = kv_bytes_per_token(cfg, kv_dtype)
    n_params = params if params is not None else estimate_params(cfg)
    weights = int(n_params * dtype_bytes(weight_dtype or cfg.get("torch_dtype")))
    # L0: what vLLM keeps for paged attention after weights and activations, over all GPUs of
    # one node (tensor parallel across the node).
    usable = gpus * (gpu_memory_gib * gpu_memory_utilization - overhead_gib_per_gpu) * GIB
    l0 = max(int(usable - weights), 0)
    l1 = int(l1_gib * GIB)
    managed = int(instance_memory_gib * tiered_storage_percent / 100 * GIB)
    l2 = curvine_pool_bytes
    tiers = [
        Tier("L0", l0, l0 // per_token, "per replica (GPU)"),
        Tier("L1", l1, l1 // per_token, "per replica (LMCache CPU cache in the Pod's memory)"),
        Tier("L2", l2, l2 // per_token, f"shared by {gpu_nodes} nodes (Curvine NVMe)"),
        Tier(
            "L2 tieredstorage",
            managed,
            managed // per_token,
            "per node (Tiered Storage reservation; serves endpoints on tieredstorage only)",
        ),
    ]
    flags: list[str] = []
    fits = l0 > 0
    if not fits:
        flags.append(
            f"model_does_not_fit: weights {weights / GIB:.1f} GiB exceed the usable "
            f"{usable / GIB:.1f} GiB of {gpus} x {gpu_memory_gib} GiB GPU on {instance_type}"
        )
    if per_token and 0 < l0 < 4096 * per_token:
        flags.append("l0_small: fewer than 4,096 tokens of KV cache fit on the GPU")
    return SizeReport(
        model=label,
        attention="mla" if is_mla(cfg) else "mha/gqa",
        kv_bytes_per_token=per_token,
        kv_dtype_bytes=dtype_bytes(kv_dtype or cfg.get("torch_dtype")),
        params=n_params,
        params_source="--params" if params is not None else "architecture",
        weight_bytes=weights,
        instance_type=instance_type,
        gpus_per_node=gpus,
        gpu_nodes=gpu_nodes,
        tiers=tiers,
        flags=flags,
        fits=fits,
    )
