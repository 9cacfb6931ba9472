"""Runs inside a runtime virtualenv: vLLM's own ``vllm serve`` parser and config classes judge the
arguments an endpoint's container gets.

stdin: {"args": [...], "model_dir": <a folder with the model's config.json> or null}. With a
model_dir the ``--model`` path (the operator's /opt/ml/model, absent here) is read from it and the
whole engine config is built, so limits that need the model (``--max-model-len``) are judged too.
stdout: {"ok": bool, "stage": "parse" | "engine args" | "engine config" | null, "error": str,
"parsed": {...}}. Imports only vLLM (and LMCache's connector name, through vLLM's registry).
"""

import contextlib
import io
import json
import os
import sys

request = json.load(sys.stdin)
# The answer is the only thing on stdout: the engines' own logging goes to stderr.
answer_to, sys.stdout = sys.stdout, sys.stderr
model_dir = request.get("model_dir")
os.environ["VLLM_NO_USAGE_STATS"] = "1"
os.environ["DO_NOT_TRACK"] = "1"
# Offline, a --model path that does not exist here is looked up as a hub repository id: only
# resolve models when there is a local folder to resolve them to.
os.environ["HF_HUB_OFFLINE"] = "1" if model_dir else "0"

# vLLM's CUDA wheel cannot infer a device without a GPU: select its CPU platform before any
# config class is built (what `vllm` itself does for commands that need no device).
from vllm import platforms  # noqa: E402
from vllm.platforms.cpu import CpuPlatform  # noqa: E402

platforms.current_platform = CpuPlatform()

from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory  # noqa: E402
from vllm.engine.arg_utils import AsyncEngineArgs  # noqa: E402
from vllm.entrypoints.openai.cli_args import make_arg_parser, validate_parsed_serve_args  # noqa: E402
from vllm.utils.argparse_utils import FlexibleArgumentParser  # noqa: E402


def answer(ok: bool, stage: str | None = None, error: str = "", **parsed: object) -> None:
    answer_to.write(
        json.dumps({"ok": ok, "stage": stage, "error": error, "parsed": parsed}, default=str)
    )
    sys.exit(0)


args = list(request["args"])
if model_dir:
    args[args.index("--model") + 1] = model_dir
parser = make_arg_parser(FlexibleArgumentParser(prog="vllm serve"))
stderr = io.StringIO()
try:
    with contextlib.redirect_stderr(stderr):
        namespace = parser.parse_args(args)
except SystemExit:
    # argparse prints the usage, then "vllm serve: error: ..." (with pydantic's lines under it)
    answer(False, "parse", stderr.getvalue().split("error: ", 1)[-1].strip())
try:
    validate_parsed_serve_args(namespace)
    engine = AsyncEngineArgs.from_cli_args(namespace)
    kv = engine.kv_transfer_config
    # vLLM resolves the connector's name only when the engine starts: ask its registry now.
    registered = KVConnectorFactory._registry
    if kv is not None and kv.kv_connector_module_path is None and kv.kv_connector not in registered:
        raise ValueError(f"Unsupported connector type: {kv.kv_connector}")
except Exception as exc:
    answer(False, "engine args", f"{type(exc).__name__}: {exc}")
KV_FIELDS = ("kv_connector", "kv_role", "kv_load_failure_policy", "kv_connector_extra_config")
parsed = {
    "port": namespace.port,
    "max_model_len": engine.max_model_len,
    "tensor_parallel_size": engine.tensor_parallel_size,
    "gpu_memory_utilization": engine.gpu_memory_utilization,
    "kv_transfer_config": None if kv is None else {f: getattr(kv, f) for f in KV_FIELDS},
}
if model_dir:
    try:
        built = engine.create_engine_config()
    except Exception as exc:
        answer(False, "engine config", f"{type(exc).__name__}: {exc}", **parsed)
    parsed["max_model_len"] = built.model_config.max_model_len
answer(True, **parsed)
