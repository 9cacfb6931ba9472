"""The lock file: values that cannot change after the first deploy, recorded per environment.

``k8s/locks/<env>.json`` is written by ``python -m k8s.render`` (``make synth``) and committed.
The loader reads it after the config validates and refuses a config that disagrees
(``check_lock``); a config parsed without a lock is not checked against one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infra.config.errors import RuleViolation
from infra.config.model import AppConfig

LOCK_DIR = Path(__file__).resolve().parents[2] / "k8s" / "locks"


def read_lock(env: str, lock_dir: Path | None = None) -> dict[str, Any] | None:
    path = (lock_dir or LOCK_DIR) / f"{env}.json"
    if not path.is_file():
        return None
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def lock_of(app: AppConfig) -> dict[str, Any]:
    """What the lock file records for this config (written by ``python -m k8s.render``)."""
    kv = app.kvcache
    return {
        "curvine_master_replicas": kv.curvine.master.replicas
        if "curvine" in kv.l2_backends
        else None,
        "endpoints": {
            f"{e.namespace}/{e.name}": {
                "l2_backend": e.l2_backend,
                "routing_strategy": e.routing_strategy,
            }
            for e in kv.endpoints
        },
    }


def check_lock(app: AppConfig, lock: dict[str, Any] | None) -> None:
    """Refuse changes of values that cannot change after the first deploy."""
    if lock is None:
        return
    env = app.environment
    _check_backend_switch(app, lock)
    old = lock.get("curvine_master_replicas")
    new = app.kvcache.curvine.master.replicas
    if "curvine" in app.kvcache.l2_backends and old is not None and old != new:
        raise RuleViolation(
            f"{old} (recorded in k8s/locks/{env}.json: Curvine cannot change its master count "
            "after install)",
            f"set it back to {old}; to rebuild Curvine with {new} masters (L2 data is lost), "
            f"delete Curvine, remove curvine_master_replicas from k8s/locks/{env}.json",
            field="kvcache.curvine.master.replicas",
            value=new,
        )
    recorded = lock.get("endpoints", {})
    for i, e in enumerate(app.kvcache.endpoints):
        was = recorded.get(f"{e.namespace}/{e.name}", {}).get("routing_strategy")
        if was is not None and was != e.routing_strategy:
            raise RuleViolation(
                f"{was!r} (the operator accepts intelligentRoutingSpec only when the endpoint "
                f"is created; recorded in k8s/locks/{env}.json)",
                f"set it back to {was!r}, or create a new endpoint under another name",
                field=f"kvcache.endpoints.{i}.routing_strategy",
                value=e.routing_strategy,
            )


def _check_backend_switch(app: AppConfig, lock: dict[str, Any]) -> None:
    """An endpoint's L2 cannot change under it without losing what it holds. A lock written
    before backends were per endpoint records one ``l2_backend`` for all (absent: curvine)."""
    kv = app.kvcache
    if kv.l2_backend_switch_confirmed:
        return
    default = lock.get("l2_backend", "curvine")
    recorded = lock.get("endpoints", {})
    for i, e in enumerate(kv.endpoints):
        entry = recorded.get(f"{e.namespace}/{e.name}")
        was = entry.get("l2_backend", default) if entry is not None else None
        if was is None or was == e.l2_backend:
            continue
        raise RuleViolation(
            f"{was!r} (recorded for endpoint {e.namespace}/{e.name} in "
            f"k8s/locks/{app.environment}.json): switching an endpoint's L2 loses what it "
            "cached there",
            f"set it back to {was!r}, or add kvcache.l2_backend_switch_confirmed: true for the "
            "deploy that switches (then remove it)",
            field=e.l2_field(i),
            value=e.l2_backend,
        )
