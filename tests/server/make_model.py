"""Runs with the server layer's virtualenv: writes a tiny model with random weights to a folder,
made here from a real architecture's configuration (Qwen3: 2 layers of 64, one KV head of 32) and
a byte-level BPE tokenizer trained on Python's own sources, with a ChatML template. Nothing is
downloaded; its text is gibberish, its scheduler, KV cache, prefix cache, streaming and /metrics
are vLLM's own.

Usage: python make_model.py FOLDER
"""

import os
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

out = Path(sys.argv[1])
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
config = Qwen3Config(
    vocab_size=bpe.get_vocab_size(),
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    head_dim=32,
    max_position_embeddings=32768,
    tie_word_embeddings=True,
    eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
    pad_token_id=tokenizer.convert_tokens_to_ids("<|endoftext|>"),
    torch_dtype="bfloat16",
)
torch.manual_seed(0)
Qwen3ForCausalLM(config).to(torch.bfloat16).save_pretrained(out, safe_serialization=True)
