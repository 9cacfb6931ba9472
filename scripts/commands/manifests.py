"""``hpkv manifests``: write the Kubernetes layer of one environment as plain YAML for kubectl or
GitOps (``k8s.render``: one file per chart in apply order, kustomization.yaml, README.md) and
record its lock; prints each file written. A folder holding anything the product did not write
there is refused before anything is read or written (``infra.cdk.written``). With
``kvcache.l2_backend: fsx_lustre`` the file system is read from the deployed kvcache stack's
outputs, and with an autoscaled endpoint the AMP workspace from the observability stack's;
without them nothing is written."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from infra.cdk.unresolved import UnresolvedTokenError
from infra.cdk.written import OutputFolder
from infra.environment.amp_workspace import WorkspaceUnknown, deployed_workspace
from infra.environment.fsx import FileSystemUnknown, deployed_file_system
from k8s.render import needs_file_system, needs_workspace, render_config
from scripts.lib import runtime
from scripts.lib.errors import Exit

OUT = "--out"


@dataclass(frozen=True)
class ManifestsOptions:
    env: str = "dev"
    out: Path | None = None
    """Default: dist/<env>."""


def run(o: ManifestsOptions) -> Exit:
    config = runtime.config(o.env)
    out = o.out or Path("dist") / o.env
    OutputFolder(out, OUT).check()  # before the deployed stacks are read
    try:
        fsx = deployed_file_system(config) if needs_file_system(config) else None
        workspace = deployed_workspace(config) if needs_workspace(config) else None
        paths = render_config(config, out, fsx=fsx, workspace=workspace, label=OUT)
    except (FileSystemUnknown, WorkspaceUnknown) as exc:
        raise runtime.fail(f"{exc}; nothing was written", Exit.USAGE) from None
    except UnresolvedTokenError as exc:
        raise runtime.fail(str(exc), Exit.USAGE) from None
    for p in paths:
        print(p)
    return Exit.OK
