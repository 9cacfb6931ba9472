"""``hpkv preflight``: credentials, HyperPod quotas, instance types in the AZ id, the Kubernetes
and add-on versions EKS offers, kubectl/helm/node versions."""

from __future__ import annotations

from scripts.lib import runtime
from scripts.lib.checks import checks_exit, checks_json, checks_table
from scripts.lib.errors import Exit
from scripts.lib.preflight.run import run_preflight


def run(env: str = "dev", as_json: bool = False) -> Exit:
    cfg = runtime.config(env)
    checks = run_preflight(runtime.CLIENTS(cfg, None), cfg)
    if as_json:
        print(checks_json(checks, environment=env))
    else:
        runtime.out.print(checks_table(f"preflight: {env}", checks))
    return checks_exit(checks)
