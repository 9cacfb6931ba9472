"""``hpkv wait-tiered-storage``: follow the Tiered Storage update, polling DescribeCluster until
the config reads back and the cluster is InService (progress on stderr)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from scripts.lib import runtime
from scripts.lib.environment import cluster_names
from scripts.lib.errors import Exit
from scripts.lib.progress import wait_for
from scripts.lib.verify.waits import tiered_storage_state


@dataclass(frozen=True)
class WaitOptions:
    env: str = "dev"
    timeout_minutes: float = 45
    interval_seconds: float = 30
    as_json: bool = False


def run(o: WaitOptions) -> Exit:
    env = o.env
    cfg = runtime.config(env)
    clients = runtime.CLIENTS(cfg, None)
    last = {"state": ""}

    def poll() -> tuple[bool, str]:
        done, last["state"] = tiered_storage_state(clients, cfg)
        return done, last["state"]

    name = cluster_names(cfg)[1]
    seconds = wait_for(
        f"Tiered Storage on {name}",
        poll,
        o.timeout_minutes * 60.0,
        o.interval_seconds,
        runtime.PROGRESS,
    )
    if o.as_json:
        print(
            json.dumps(
                {
                    "ok": True,
                    "environment": env,
                    "cluster": name,
                    "seconds": round(seconds, 1),
                    "state": last["state"],
                }
            )
        )
    else:
        runtime.out.print(f"Tiered Storage on {name}: {last['state']} (after {seconds:.0f}s)")
    return Exit.OK
