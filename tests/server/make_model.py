"""Runs with a server virtualenv: writes a model with random weights to a folder, made here from a
real architecture's configuration and a byte-level BPE tokenizer trained on Python's own sources,
with a ChatML template. Nothing is downloaded; its text is gibberish, its scheduler, KV cache,
prefix cache, streaming and /metrics are vLLM's own.

Shapes: ``tiny`` (the server layer: Qwen3 shrunk to 2 layers of 64, one KV head of 32) and
``qwen3-0.6b`` (make bench-ttft: the layers, widths, heads and vocabulary of Qwen3-0.6B's
config.json, 0.6 billion parameters).

Usage: python make_model.py FOLDER [tiny|qwen3-0.6b]
"""

import os
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

out = Path(sys.argv[1])
shape = sys.argv[2] if len(sys.argv) > 2 else "tiny"
SHAPES = {
    "tiny": {
        "vocab_size": None,
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "head_dim": 32,
        "max_position_embeddings": 32768,
    },
    # Qwen/Qwen3-0.6B's config.json.
    "qwen3-0.6b": {
        "vocab_size": 151936,
        "hidden_size": 1024,
        "intermediate_size": 3072,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 8,
        "head_dim": 128,
        "max_position_embeddings": 40960,
        "rope_theta": 1000000.0,
    },
}
out.mkdir(parents=True, exist_ok=True)
corpus = [p.read_text(errors="ignore") for p in sorted(Path(os.__file__).parent.glob("*.py"))[:80]]
special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
bpe = Tokenizer(models.BPE())
bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
bpe.decoder = decoders.ByteLevel()
bpe.train_from_iterator(
    corpus,
    trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    ),
)
tokenizer = PreTrainedTokenizerFast(
    tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>"
)
tokenizer.chat_template = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
tokenizer.save_pretrained(out)
dims = {**SHAPES[shape]}
dims["vocab_size"] = dims["vocab_size"] or bpe.get_vocab_size()
config = Qwen3Config(
    **dims,
    tie_word_embeddings=True,
    eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
    pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    torch_dtype="bfloat16",
)
torch.manual_seed(0)
Qwen3ForCausalLM(config).to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
