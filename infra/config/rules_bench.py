"""Rules on ``bench``: the endpoints it compares are configured ones, one per tier, and each of
them can take the longest request its workloads send (``--max-model-len``)."""

from __future__ import annotations

import re

from infra.config.bench import longest_requests
from infra.config.errors import RuleViolation
from infra.config.kvcache import EndpointConfig
from infra.config.model import AppConfig

# The key that sizes each workload's longest request, for the message.
_SIZED_BY = {
    "sweep": "bench.sweep_prompt_words",
    "cross_pod": "bench.cross_pod_prompt_words",
    "chat": "bench.chat",
}


# The bench keys that size a workload's requests: written, they say the environment is
# benchmarked, so every compared endpoint is held to them even without bench.endpoints.
_WORKLOAD_KEYS = frozenset({"sweep_prompt_words", "cross_pod_prompt_words", "max_tokens", "chat"})
_DECIMAL = re.compile(r"(\d+(?:\.\d+)?)([kmgt])")
_BINARY = re.compile(r"(\d+)([KMGT])")


def vllm_int(text: str) -> int | None:
    """A number as vLLM reads ``--max-model-len``: plain, or with a suffix, k/m/g/t for powers
    of 1000 (decimals allowed: 25.6k) and K/M/G/T for powers of 1024 (``human_readable_int``
    in vllm/engine/arg_utils.py); None for what means the model's own (``auto``, ``-1``)."""
    text = text.strip()
    decimal = _DECIMAL.fullmatch(text)
    if decimal is not None:
        return int(float(decimal.group(1)) * 1000 ** ("kmgt".index(decimal.group(2)) + 1))
    binary = _BINARY.fullmatch(text)
    if binary is not None:
        return int(binary.group(1)) * 1024 ** ("KMGT".index(binary.group(2)) + 1)
    return int(text) if text.isdigit() else None


def max_model_len(e: EndpointConfig) -> int | None:
    """The context vLLM serves for ``e`` (``--max-model-len`` in its args, which vLLM also takes
    as ``--max_model_len`` and ``--max-model-len=<n>``); None: not set, so the model's own,
    which the config does not know."""
    args = list(e.args)
    for i, arg in enumerate(args):
        key, eq, value = arg.partition("=")
        if key.replace("_", "-") != "--max-model-len":
            continue
        if not eq:
            if i + 1 >= len(args):
                return None
            value = args[i + 1]
        return vllm_int(value)
    return None


def check_bench(app: AppConfig) -> None:
    """Only with ``bench.endpoints`` listed or a workload sized (``_WORKLOAD_KEYS``): then the
    config says these endpoints (or, without the list, every endpoint) are benchmarked. Without
    either ``bench compare`` takes every endpoint and checks the same at run time (one per tier;
    each request within the context the endpoint serves), so an environment that is never
    benchmarked is not refused for its benchmark's defaults."""
    bench = app.bench
    sized = bool(bench.model_fields_set & _WORKLOAD_KEYS)
    if not bench.endpoints and not sized:
        return
    compared = [
        (i, e)
        for i, e in enumerate(app.kvcache.endpoints)
        if e.name in bench.endpoints or not bench.endpoints
    ]
    configured = [e.name for e in app.kvcache.endpoints]
    if len(set(bench.endpoints)) != len(bench.endpoints):
        raise RuleViolation(
            "each endpoint once",
            "remove the repeated name",
            field="bench.endpoints",
            value=list(bench.endpoints),
        )
    for name in bench.endpoints:
        if name not in configured:
            raise RuleViolation(
                f"names of kvcache.endpoints ({', '.join(configured)})",
                "fix the name, or remove it from bench.endpoints",
                field="bench.endpoints",
                value=list(bench.endpoints),
            )
    tiers: dict[str, str] = {}
    for _, e in compared if bench.endpoints else ():
        if e.l2_backend in tiers:
            raise RuleViolation(
                f"one endpoint per L2 backend: {tiers[e.l2_backend]} and {e.name} are both on "
                f"{e.l2_backend}",
                "list one endpoint per tier in bench.endpoints",
                field="bench.endpoints",
                value=list(bench.endpoints),
            )
        tiers[e.l2_backend] = e.name
    longest = longest_requests(
        bench.sweep_prompt_words, bench.cross_pod_prompt_words, bench.max_tokens, bench.chat
    )
    chat = bench.chat
    sizes = {
        "sweep": list(bench.sweep_prompt_words),
        "cross_pod": bench.cross_pod_prompt_words,
        "chat": f"{chat.rounds} rounds of {chat.question_words}-word questions and "
        f"{chat.answer_tokens}-token answers on {chat.system_prompt_words} + "
        f"{chat.user_context_words} words",
    }
    for i, e in compared:
        limit = max_model_len(e)
        if limit is None:
            continue
        for workload, tokens in longest.items():
            if tokens > limit:
                raise RuleViolation(
                    f"requests that fit endpoint {e.name}'s --max-model-len {limit}: the longest "
                    f"{workload} request is about {tokens} tokens (prompt and answer)",
                    f"lower {_SIZED_BY[workload]}, or raise --max-model-len in "
                    f"kvcache.endpoints.{i}.args",
                    field=_SIZED_BY[workload],
                    value=sizes[workload],
                )
