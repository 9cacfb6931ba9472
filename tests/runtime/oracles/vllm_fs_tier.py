"""Runs inside a runtime virtualenv, as one replica's model container: vLLM's own offloading
connector path with a file-system secondary tier (``OffloadingConnector`` +
``TieringOffloadingSpec``, vLLM 0.22+), judged and then run on the CPU as far as it can go there.

stdin: {"args": [...], "model_dir": <folder with the model's config.json> or null (the --model
path holds it), "role": "store" | "retrieve", "blocks": N, "seed": S}.
stdout: {"ok": bool, "stage": "parse" | "engine args" | "engine config" | "spec" | "tier" | null,
"error": str, "vllm": its version, "root_dir": ..., "files": [paths under root_dir], "keys": [hex],
"lookup": blocks found, "loaded": blocks read back, "equal": bytes equal to what the storing
replica wrote}.

What runs is vLLM's: its parser and config classes on the arguments, ``OffloadingSpecFactory``
resolving ``spec_name`` (what the connector does when the engine starts), the spec's scheduler-side
manager with its CPU primary tier (a /dev/shm region) and ``FileSystemTierManager``, the engine
core's block hashing (``init_none_hash`` with the process's ``PYTHONHASHSEED``,
``hash_block_tokens``) and the connector's offload keys. Two stand-ins, because there is no GPU:
the KV cache layout comes from the model's config.json (one full-attention group, what vLLM
builds for it), not from profiling a GPU; and the blocks are put into (and read from) the primary
tier directly, where the GPU-to-CPU copy would (vLLM refuses those handlers off CUDA). The primary
tier is sized to the ``blocks`` of the run, not to ``cpu_bytes_to_use`` (vLLM populates the whole
region up front): the rendered value is judged by the config classes, not allocated. The block
size is the CPU platform's default (128 tokens; 16 on CUDA), the same for every replica here.
"""

import json
import os
import sys
import time

request = json.load(sys.stdin)
answer_to, sys.stdout = sys.stdout, sys.stderr
os.environ["VLLM_NO_USAGE_STATS"] = "1"
os.environ["DO_NOT_TRACK"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"

import vllm  # noqa: E402
from vllm import platforms  # noqa: E402
from vllm.platforms.cpu import CpuPlatform  # noqa: E402

platforms.current_platform = CpuPlatform()

import contextlib  # noqa: E402
import importlib.util  # noqa: E402
import io  # noqa: E402

from vllm.engine.arg_utils import AsyncEngineArgs  # noqa: E402
from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args  # noqa: E402
from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: E402

TIERING = "vllm.v1.kv_offload.tiering.spec"
result: dict[str, object] = {"ok": False, "stage": None, "error": "", "vllm": vllm.__version__}


def answer(stage: str | None = None, error: str = "") -> None:
    result.update(ok=stage is None, stage=stage, error=error)
    answer_to.write(json.dumps(result, default=str))
    answer_to.flush()
    os._exit(0)  # the tier's I/O threads are not daemons


args = list(request["args"])
if request.get("model_dir"):
    args[args.index("--model") + 1] = request["model_dir"]
stderr = io.StringIO()
try:
    with contextlib.redirect_stderr(stderr):
        namespace = make_arg_parser(FlexibleArgumentParser(prog="vllm serve")).parse_args(args)
except SystemExit:
    answer("parse", stderr.getvalue().split("error: ", 1)[-1].strip())
try:
    validate_parsed_serve_args(namespace)
    engine = AsyncEngineArgs.from_cli_args(namespace)
except Exception as exc:
    answer("engine args", f"{type(exc).__name__}: {exc}")
try:
    config = engine.create_engine_config()
except Exception as exc:
    answer("engine config", f"{type(exc).__name__}: {exc}")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from vllm.v1.kv_cache_interface import (  # noqa: E402
    FullAttentionSpec,
    KVCacheConfig,
    KVCacheGroupSpec,
    KVCacheTensor,
)

kv = config.kv_transfer_config
extra = dict(kv.kv_connector_extra_config) if kv else {}
result["extra_config"] = extra
model = config.model_config
n_layers = model.get_num_layers(config.parallel_config)
layers = [f"model.layers.{i}.self_attn.attn" for i in range(n_layers)]
block_tokens = config.cache_config.block_size
attention = FullAttentionSpec(
    block_size=block_tokens,
    num_kv_heads=model.get_num_kv_heads(config.parallel_config),
    head_size=model.get_head_size(),
    dtype=model.dtype,
)
blocks = request["blocks"]
kv_cache_config = KVCacheConfig(
    num_blocks=blocks,
    kv_cache_tensors=[KVCacheTensor(attention.page_size_bytes * blocks, [n]) for n in layers],
    kv_cache_groups=[KVCacheGroupSpec(layers, attention)],
)
if kv is not None and "cpu_bytes_to_use" in kv.kv_connector_extra_config:
    primary_bytes = attention.page_size_bytes * len(layers) * blocks
    kv.kv_connector_extra_config["cpu_bytes_to_use"] = primary_bytes
try:
    from vllm.v1.kv_offload.factory import OffloadingSpecFactory
except ModuleNotFoundError as exc:
    # Before 0.23 the factory's imports reach modules the runtime layer does not install for
    # that image (the structured-output backends): without the factory, the module that would
    # define the spec says whether this vLLM has it.
    spec_name = extra.get("spec_name", "CPUOffloadingSpec")
    try:
        has_tiering = importlib.util.find_spec(TIERING) is not None
    except ModuleNotFoundError:  # its parent package is missing too
        has_tiering = False
    if spec_name == "TieringOffloadingSpec" and not has_tiering:
        answer("spec", f"{spec_name}: no module {TIERING} in vLLM {vllm.__version__} ({exc})")
    answer("spec", f"{type(exc).__name__}: {exc}")
spec = None
try:
    spec = OffloadingSpecFactory.create_spec(config, kv_cache_config)
    manager = spec.get_manager()
except Exception as exc:
    region = getattr(spec, "_scheduler_mmap", None)  # made before a tier is refused
    if region is not None:
        region.cleanup()
    answer("spec", f"{type(exc).__name__}: {exc}")

try:
    (tier,) = manager.secondary_tiers
    view = manager.primary_tier.get_kv_memoryview()
    root = next(t["root_dir"] for t in extra.get("secondary_tiers", ()) if t.get("type") == "fs")
    result["root_dir"] = root

    # The engine core's block hashes of the prompt, then the connector's offload keys (one per
    # offloaded block: every block_size_factor-th hash, group 0).
    from vllm.utils.hashing import get_hash_fn_by_name
    from vllm.v1.core.kv_cache_utils import hash_block_tokens, init_none_hash

    hash_fn = get_hash_fn_by_name(config.cache_config.prefix_caching_hash_algo)
    init_none_hash(hash_fn)
    from vllm.v1.core import kv_cache_utils
    from vllm.v1.kv_offload.base import ReqContext, make_offload_key
    from vllm.v1.kv_offload.tiering.base import JobMetadata

    generator = torch.Generator().manual_seed(request["seed"])
    factor = spec.block_size_factor
    n_tokens = blocks * factor * block_tokens
    tokens = torch.randint(0, 150_000, (n_tokens,), generator=generator).tolist()
    hashes, parent = [], None
    for start in range(0, len(tokens) - block_tokens + 1, block_tokens):
        parent = hash_block_tokens(hash_fn, parent, tokens[start : start + block_tokens])
        hashes.append(parent)
    keys = [make_offload_key(h, 0) for h in hashes[factor - 1 :: factor]]
    result["keys"] = [bytes(k).hex() for k in keys]
    result["none_hash"] = bytes(kv_cache_utils.NONE_HASH).hex()
    rows = np.arange(len(keys))
    flat = view.cast("B")
    row = view.strides[0]
    payload = (
        torch.randint(-128, 127, (len(keys) * row,), dtype=torch.int8, generator=generator)
        .numpy()
        .tobytes()
    )

    def wait(job: int) -> bool:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for done in tier.get_finished_jobs():
                if done.job_id == job:
                    return bool(done.success)
            time.sleep(0.01)
        raise TimeoutError(f"job {job} did not finish")

    context = ReqContext(req_id="r")
    if request["role"] == "store":
        flat[: len(payload)] = payload
        job = JobMetadata(
            job_id=1, keys=keys, block_ids=rows, is_promotion=False, req_context=context
        )
        tier.submit_store(job)
        result["stored"] = wait(1)
    else:
        flat[: len(payload)] = bytes(len(payload))
        found = [k for k in keys if tier.lookup(k, context)]
        result["lookup"] = len(found)
        if found:
            job = JobMetadata(
                job_id=2,
                keys=found,
                block_ids=rows[: len(found)],
                is_promotion=True,
                req_context=context,
            )
            tier.submit_load(job)
            result["loaded"] = len(found) if wait(2) else 0
        result["equal"] = bytes(flat[: len(found) * row]) == payload[: len(found) * row]
    result["files"] = sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
    )
except Exception as exc:
    manager.shutdown()  # the primary tier's /dev/shm region goes with it
    answer("tier", f"{type(exc).__name__}: {exc}")
manager.shutdown()
answer()
