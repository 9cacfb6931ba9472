"""Rules on ``bench``: the endpoints it compares are configured ones, one per tier, and each of
them can take the longest request its workloads send (``--max-model-len``)."""

from __future__ import annotations

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


def max_model_len(e: EndpointConfig) -> int | None:
    """The context vLLM serves for ``e`` (``--max-model-len`` in its args); None: not set, so
    the model's own, which the config does not know."""
    args = list(e.args)
    for i, arg in enumerate(args):
        if arg == "--max-model-len" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--max-model-len="):
            value = arg.split("=", 1)[1]
        else:
            continue
        return int(value) if value.isdigit() else None
    return None


def check_bench(app: AppConfig) -> None:
    """Only with ``bench.endpoints`` listed: then the config says these endpoints are
    benchmarked. Without it ``bench compare`` takes every endpoint and checks the same at run
    time (one per tier; each request within the context the endpoint serves), so an
    environment that is never benchmarked is not refused for its benchmark's defaults."""
    bench = app.bench
    if not bench.endpoints:
        return
    compared = [(i, e) for i, e in enumerate(app.kvcache.endpoints) if e.name in bench.endpoints]
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
    for _, e in compared:
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
