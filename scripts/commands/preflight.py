"""``hpkv preflight``: credentials, HyperPod quotas, instance types in the AZ id, the Kubernetes
and add-on versions EKS offers, kubectl/helm/node versions."""

from __future__ import annotations

from dataclasses import dataclass

from scripts.lib import runtime
from scripts.lib.checks import checks_exit, checks_json, checks_table
from scripts.lib.errors import Exit
from scripts.lib.preflight.run import run_preflight


@dataclass(frozen=True)
class PreflightOptions:
    env: str = "dev"
    as_json: bool = False


def run(o: PreflightOptions) -> Exit:
    cfg = runtime.config(o.env)
    checks = run_preflight(runtime.CLIENTS(cfg, None), cfg)
    if o.as_json:
        print(checks_json(checks, environment=o.env))
    else:
        runtime.out.print(checks_table(f"preflight: {o.env}", checks))
    return checks_exit(checks)
