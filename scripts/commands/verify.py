"""``hpkv verify``: check a live environment stage by stage, then prove cross-Pod reuse through L2
(optionally waiting first for Tiered Storage, the GPU nodes and the endpoint's rollout)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from scripts.lib import runtime
from scripts.lib.checks import Check, checks_exit, checks_json, checks_table
from scripts.lib.clients import Clients
from scripts.lib.errors import Exit
from scripts.lib.verify.chaos import ChaosOptions, run_chaos
from scripts.lib.verify.run import run_verify
from scripts.lib.verify.waits import wait_until_ready


@dataclass(frozen=True)
class VerifyOptions:
    env: str = "dev"
    namespace: str | None = None
    endpoint: str | None = None
    as_json: bool = False
    skip_l2_test: bool = False
    direct: bool = False
    context: str | None = None
    prompt_words: int = 1900
    """Prompt length (~tokens) of the cross-Pod L2 test."""
    max_tokens: int = 4
    seed: int | None = None
    min_hit_ratio: float = 0.5
    """The cross-Pod test passes when the second Pod hits this share."""
    port: int | None = None
    """Model port (default: the container's)."""
    wait_minutes: float = 0
    chaos: bool = False
    emit: bool = True
    """Print the result (recreate runs verify as a phase)."""


def run(o: VerifyOptions) -> tuple[Exit, dict[str, Any]]:
    """Run verify; returns the exit code and the JSON object (printed unless ``emit`` is off)."""
    env, as_json, emit = o.env, o.as_json, o.emit
    cfg = runtime.config(env)
    ref = runtime.endpoint(cfg, o.endpoint, o.namespace)
    clients = runtime.CLIENTS(cfg, o.context)
    waited: dict[str, float] = {}
    if o.wait_minutes > 0:
        waited = wait_until_ready(clients, cfg, ref, o.wait_minutes * 60.0, show=runtime.PROGRESS)
    transport = None if o.skip_l2_test else runtime.transport(o.direct, o.context)
    checks, cross = run_verify(
        clients,
        cfg,
        ref,
        transport,
        prompt_words=o.prompt_words,
        max_tokens=o.max_tokens,
        seed=o.seed,
        min_hit_ratio=o.min_hit_ratio,
        port=o.port,
    )
    if o.chaos:
        checks += _chaos(clients, cfg, ref, checks, o)
    extra: dict[str, Any] = {"environment": env, "l2_test": cross.as_dict() if cross else None}
    if waited:
        extra["waited_seconds"] = {k: round(v, 1) for k, v in waited.items()}
    payload = json.loads(checks_json(checks, **extra))
    if emit and as_json:
        print(json.dumps(payload))
    elif emit:
        runtime.out.print(checks_table(f"verify: {env} {ref.namespace}/{ref.name}", checks))
    return checks_exit(checks), payload


def _chaos(
    clients: Clients, cfg: AppConfig, ref: EndpointConfig, checks: list[Check], o: VerifyOptions
) -> list[Check]:
    """The chaos stages, only on an environment verify found healthy: breaking a broken one
    proves nothing. They take verify's max_tokens and seed; the rest are ChaosOptions'."""
    failed = [c.stage for c in checks if c.status == "fail"]
    opts = ChaosOptions(max_tokens=o.max_tokens, seed=o.seed)
    return run_chaos(
        clients,
        cfg,
        ref,
        runtime.transport(o.direct, o.context),
        opts,
        show=runtime.PROGRESS,
        guard=lambda: f"verify failed ({', '.join(failed)}): fix that first" if failed else None,
    )
