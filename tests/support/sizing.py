"""Model configs the sizing tests share."""

from __future__ import annotations

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
# 4 layers x 2 KV heads x head dim 512 / 8 = 64: 2 x 4 x 2 x 64 x 2 B = 2,048 KV bytes per token.
SMALL = {
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "hidden_size": 512,
    "intermediate_size": 1024,
    "vocab_size": 1000,
    "torch_dtype": "bfloat16",
}
