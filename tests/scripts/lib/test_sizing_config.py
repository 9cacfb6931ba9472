"""What the sizing model reads: a model's config.json (a file, its folder or a preset) and its
one-line errors naming the file, the field and the fix, dtypes, and the dimensions KV bytes per
token come from. Pure functions; no double."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from scripts.lib.sizing import (
    PRESETS,
    SizingError,
    dtype_bytes,
    kv_bytes_per_token,
    load_model_config,
)
from tests.support.sizing import SMALL

HF = "pass a Hugging Face config.json"
MAX = "expected a whole number from 0 to 10,000,000"


def _write(tmp_path: Path, content: Any) -> Path:
    path = tmp_path / "config.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\xff\xfe{}", "{path}: not a text file; " + HF),
        (
            "{",
            "{path}: not valid JSON (Expecting property name enclosed in double quotes: line 1 "
            "column 2 (char 1)); " + HF,
        ),
        ("[1]", "{path}: a JSON list, not an object; " + HF),
        ({"text_config": [1]}, "{path}: text_config is a list, not an object"),
        # every architecture field is checked, the last one too, and the message names it
        ({**SMALL, "first_k_dense_replace": -1}, f"{{path}}: first_k_dense_replace is '-1'; {MAX}"),
        (
            {**SMALL, "num_hidden_layers": 10_000_001},
            f"{{path}}: num_hidden_layers is '10000001'; {MAX}",
        ),
        ({**SMALL, "hidden_size": True}, f"{{path}}: hidden_size is 'True'; {MAX}"),
        ({**SMALL, "hidden_size": 4.5}, f"{{path}}: hidden_size is '4.5'; {MAX}"),
        ({**SMALL, "hidden_size": "4096"}, f"{{path}}: hidden_size is '4096'; {MAX}"),
        # the shown value is cut at 40 characters
        ({**SMALL, "vocab_size": "x" * 50}, f"{{path}}: vocab_size is '{'x' * 40}'; {MAX}"),
        ({**SMALL, "torch_dtype": 16}, "{path}: torch_dtype is '16'; expected e.g. bfloat16"),
        (
            {**SMALL, "torch_dtype": 10**50},
            f"{{path}}: torch_dtype is '1{'0' * 39}'; expected e.g. bfloat16",
        ),
    ],
)
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
    assert load_model_config(str(path)) == (
        str(path),
        {**SMALL, "first_k_dense_replace": value, "q_lora_rank": value},
    )


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
        (
            {
                "torch_dtype": "float32",
                "text_config": {k: v for k, v in SMALL.items() if k != "torch_dtype"},
            },
            "float32",
        ),
        # a dtype of its own wins
        ({"torch_dtype": "float32", "text_config": SMALL}, "bfloat16"),
        # no dtype anywhere: none is invented
        ({k: v for k, v in SMALL.items() if k != "torch_dtype"}, None),
    ],
)
def test_the_text_config_dtype(tmp_path: Path, raw: dict[str, Any], dtype: str | None) -> None:
    _, text = load_model_config(str(_write(tmp_path, raw)))
    assert text.get("torch_dtype") == dtype
    assert text["num_hidden_layers"] == 4


def test_a_text_config_field_out_of_range_is_reported(tmp_path: Path) -> None:
    path = _write(tmp_path, {"text_config": {**SMALL, "head_dim": -5}})
    with pytest.raises(SizingError, match=r"^.*config\.json: head_dim is '-5'; expected"):
        load_model_config(str(path))


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
)
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
