"""``hpkv patch``: point an endpoint's L2 at Curvine without Kyverno (pause the operator, patch
the Deployment, restore), or with ``--dry-run`` print the JSON Patch."""

from __future__ import annotations

import json
from dataclasses import dataclass

from infra.config.kvcache import MOUNTED_L2_BACKENDS
from k8s.l2_pod import l2_settings
from scripts.lib import runtime
from scripts.lib.endpoints import l2_claim
from scripts.lib.errors import Exit, OperationError
from scripts.lib.kube import find_endpoint_deployment
from scripts.lib.patch import compute_patch, run_patch


@dataclass(frozen=True)
class PatchOptions:
    env: str = "dev"
    namespace: str | None = None
    endpoint: str | None = None
    deployment: str | None = None
    """Default: from the endpoint's status."""
    dry_run: bool = False
    timeout_minutes: int = 15
    as_json: bool = False
    context: str | None = None


def run(o: PatchOptions) -> Exit:
    env, as_json, deployment = o.env, o.as_json, o.deployment
    cfg = runtime.config(env)
    ref = runtime.endpoint(cfg, o.endpoint, o.namespace)
    if ref.l2_backend not in MOUNTED_L2_BACKENDS:
        raise runtime.fail(
            f"{ref.namespace}/{ref.name}: l2_backend is {ref.l2_backend} in config/{env}.yaml, "
            "so the policy gives it no L2 to patch (only curvine and fsx_lustre are mounted)",
            Exit.USAGE,
        )
    clients = runtime.CLIENTS(cfg, o.context)
    try:
        settings = l2_settings(cfg, ref, l2_claim(clients, cfg))
        if o.dry_run:
            dep = find_endpoint_deployment(clients, ref, deployment)
            if dep is None:
                raise OperationError(
                    f"no Deployment for {ref.namespace}/{ref.name}; pass --deployment"
                )
            ops = compute_patch(dep, settings)
            print(
                json.dumps(
                    {"deployment": dep["metadata"]["name"], "ops": ops},
                    indent=None if as_json else 2,
                )
            )
            return Exit.OK
        result = run_patch(
            clients,
            ref,
            settings,
            deployment,
            o.timeout_minutes * 60.0,
            show_progress=runtime.PROGRESS,
        )
    except OperationError as exc:
        raise runtime.fail(str(exc)) from None
    if as_json:
        print(
            json.dumps(
                {
                    "deployment": result.deployment,
                    "changed": result.changed,
                    "ops": result.ops,
                    "steps": result.steps,
                }
            )
        )
    else:
        for step in result.steps:
            runtime.out.print(f"- {step}")
        runtime.out.print("patched" if result.changed else "no change")
    return Exit.OK
