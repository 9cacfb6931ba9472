"""``hpkv verify``: check a live environment stage by stage, then prove cross-Pod reuse through L2
(optionally waiting first for Tiered Storage, the GPU nodes and the endpoint's rollout)."""

from __future__ import annotations

import json
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


def run(
    env: str,
    namespace: str | None,
    endpoint: str | None,
    as_json: bool,
    skip_l2: bool,
    direct: bool,
    context: str | None,
    l2: dict[str, Any],
    wait_minutes: float = 0,
    emit: bool = True,
    chaos: bool = False,
) -> tuple[Exit, dict[str, Any]]:
    """Run verify; returns the exit code and the JSON object (printed unless ``emit`` is off)."""
    cfg = runtime.config(env)
    ref = runtime.endpoint(cfg, endpoint, namespace)
    clients = runtime.CLIENTS(cfg, context)
    waited: dict[str, float] = {}
    if wait_minutes > 0:
        waited = wait_until_ready(clients, cfg, ref, wait_minutes * 60.0, show=runtime.PROGRESS)
    transport = None if skip_l2 else runtime.transport(direct, context)
    checks, cross = run_verify(clients, cfg, ref, transport, **l2)
    if chaos:
        checks += _chaos(clients, cfg, ref, checks, direct, context, l2)
    extra: dict[str, Any] = {"environment": env, "l2_test": cross.as_dict() if cross else None}
    if waited:
        extra["waited_seconds"] = {k: round(v, 1) for k, v in waited.items()}
    payload = json.loads(checks_json(checks, **extra))
    if emit and as_json:
        print(json.dumps(payload))
    elif emit:
        runtime.out.print(checks_table(f"verify: {env} {ref.namespace}/{ref.name}", checks))
    return checks_exit(checks), payload


# What the chaos stages take from verify's own options; the rest are ChaosOptions' defaults.
CHAOS_OPTIONS = ("max_tokens", "seed")


def _chaos(clients: Clients, cfg: AppConfig, ref: EndpointConfig, checks: list[Check],
           direct: bool, context: str | None, l2: dict[str, Any]) -> list[Check]:  # fmt: skip
    """The chaos stages, only on an environment verify found healthy: breaking a broken one
    proves nothing."""
    failed = [c.stage for c in checks if c.status == "fail"]
    opts = ChaosOptions(**{k: l2[k] for k in CHAOS_OPTIONS if l2.get(k) is not None})
    return run_chaos(
        clients, cfg, ref, runtime.transport(direct, context), opts, show=runtime.PROGRESS,
        guard=lambda: f"verify failed ({', '.join(failed)}): fix that first" if failed else None,
    )  # fmt: skip
