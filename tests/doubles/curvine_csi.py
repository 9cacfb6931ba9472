"""Curvine's CSI driver as far as FUSE processes and their metrics ports go, as CurvineIO/curvine
v0.3.2-alpha (commit f40ca6ff7fbc985b15e7a3f3079516d244f10a62) has it:

- CreateVolume (``curvine-csi/pkg/csi/controller.go``) stores the StorageClass parameters in the
  new PV's volume context, plus ``author``, ``master-addrs``, ``fs-path`` and ``curvine-path``
  (``<fs-path>/<pv name>``); the external-provisioner adds its
  ``storage.kubernetes.io/csiProvisionerIdentity``. A static PV brings its own volumeAttributes.
- NodeStageVolume (``node.go``) passes every key of that context to curvine-fuse as
  ``--<key> <value>`` except the ones the driver owns and Kubernetes' own (``fuse_cli.go``
  CollectPassthroughParams), and keys the FUSE process by master-addrs, fs-path and those flags
  (``volume_handle.go`` GenerateMountKeyWithFuseParams): volumes with one key on one node share
  one FUSE process, every other key starts another (``fuse_manager.go`` StartFuseProcess).
- With ``MOUNT_MODE=embedded`` every FUSE process of a node runs inside the node plugin's
  container, in its one network namespace. Each serves /metrics on ``0.0.0.0:<--web-port>``,
  9002 without the flag (``curvine-fuse/src/web_server.rs``, ``cli/mount_args.rs``,
  ``ClusterConf::DEFAULT_FUSE_WEB_PORT``); a second process on a taken port logs the bind error
  and mounts without metrics (``cli/mount_run.rs``).
"""

from __future__ import annotations

DEFAULT_WEB_PORT = 9002
# Keys the driver handles itself and never forwards (fuse_cli.go reservedVolumeParameterKeys).
OWNED = {"master-addrs", "fs-path", "path-type", "curvine-path", "author", "volume-handle"}
KUBERNETES_PREFIXES = ("csi.storage.k8s.io/", "storage.kubernetes.io/")

MountKey = tuple[str, str, tuple[tuple[str, str], ...]]


def provisioned_context(parameters: dict[str, str], pv_name: str) -> dict[str, str]:
    """The volume context of a PV that CreateVolume provisioned from ``parameters``."""
    fs_path = parameters.get("fs-path", "/")
    identity = {"storage.kubernetes.io/csiProvisionerIdentity": "1767225600000-8081-curvine"}
    return {
        **parameters,
        "author": "curvine.io",
        "fs-path": fs_path,
        "curvine-path": f"{fs_path.rstrip('/')}/{pv_name}",
        **identity,
    }


def flags(context: dict[str, str]) -> dict[str, str]:
    """What NodeStageVolume hands curvine-fuse as ``--<key> <value>``."""
    return {
        k: v
        for k, v in context.items()
        if v and k not in OWNED and not k.startswith(KUBERNETES_PREFIXES)
    }


def mount_key(context: dict[str, str]) -> MountKey:
    return (
        context["master-addrs"],
        context.get("fs-path") or "/",
        tuple(sorted(flags(context).items())),
    )


def fuse_processes(contexts: list[dict[str, str]]) -> dict[MountKey, int]:
    """The FUSE processes one node runs for the volumes staged there, each with the port its
    metrics server binds."""
    return {mount_key(c): int(flags(c).get("web-port", DEFAULT_WEB_PORT)) for c in contexts}
