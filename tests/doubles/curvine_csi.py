"""Curvine's CSI node service as far as volumes, FUSE processes and their metrics ports go, as
CurvineIO/curvine v0.4.1 (commit 709f24781f35a0ea8dda01b12212ede007712498) has it. The driver
did not change between v0.3.2-alpha and v0.4.1 apart from its version output; the flags it hands
curvine-fuse did (``curvine-fuse/src/cli/mount_args.rs``).

- CreateVolume (``curvine-csi/pkg/csi/controller.go``) stores the StorageClass parameters in the
  new PV's volume context, plus ``author``, ``master-addrs``, ``fs-path`` and ``curvine-path``
  (``<fs-path>/<pv name>``), under a handle ``<cluster-id>@<fs-path>@<pv name>``; the
  external-provisioner adds its ``storage.kubernetes.io/csiProvisionerIdentity``. A static PV
  brings its own volumeAttributes and handle.
- NodeStageVolume (``node.go``) refuses ``mnt-path`` (``fuse_cli.go``
  RejectDisallowedVolumeParameters) and a context without ``master-addrs``. It passes every
  other key to curvine-fuse as ``--<key> <value>`` except the ones the driver owns and
  Kubernetes' own (CollectPassthroughParams). For a handle that is not the provisioner's
  (``fuse_validate.go`` IsStaticVolumeID: a static PV) it first runs ``curvine-fuse
  validate-config`` with those flags; a flag curvine-fuse does not define fails it with
  InvalidArgument. It keys the FUSE process by master-addrs, fs-path and those flags
  (``volume_handle.go`` GenerateMountKeyWithFuseParams): volumes with one key on one node share
  one FUSE process, every other key starts another (``fuse_manager.go`` StartFuseProcess).
- NodePublishVolume (``node.go``) refuses a context without ``master-addrs`` or without
  ``curvine-path`` (InvalidArgument), and one whose ``curvine-path`` does not start with its
  ``fs-path`` (Internal); it bind-mounts ``curvine-path`` relative to the FUSE mount of
  ``fs-path`` into the Pod.
- With ``MOUNT_MODE=embedded`` every FUSE process of a node runs inside the node plugin's
  container, in its one network namespace. Each serves /metrics on ``0.0.0.0:<--web-port>``,
  9002 without the flag (``curvine-fuse/src/web_server.rs``, ``ClusterConf::DEFAULT_FUSE_WEB_PORT``
  in ``crates/common/curvine-config/src/cluster_conf.rs``).

The flags modelled are the value-taking ones of ``FuseMountArgs`` and the two ``--client.*``
overrides the app uses (``ClientConf`` ``ttl_ms_str``/``ttl_action_str``, ``#[client_cli]`` in
``crates/common/curvine-config/src/client_conf.rs``). Any other flag is refused: the double does
not know whether curvine-fuse takes it.
"""

from __future__ import annotations

DEFAULT_WEB_PORT = 9002
# Keys the driver handles itself and never forwards (fuse_cli.go reservedVolumeParameterKeys).
OWNED = {"master-addrs", "fs-path", "path-type", "curvine-path", "author", "volume-handle"}
REJECTED = {"mnt-path"}  # fuse_cli.go rejectedVolumeParameterKeys
KUBERNETES_PREFIXES = ("csi.storage.k8s.io/", "storage.kubernetes.io/")
# curvine-fuse v0.4.1's value-taking mount flags (mount_args.rs FuseMountArgs), and the client
# overrides modelled. The second-based timeouts (attr-timeout, entry-timeout, negative-timeout)
# and node-cache-size, meta-cache-capacity and ac-attr-timeout of v0.3.2-alpha are gone.
FUSE_FLAGS = {
    "mnt-number",
    "io-threads",
    "worker-threads",
    "tasks-per-mnt",
    "mnt-per-task",
    "clone-fd",
    "fuse-channel-size",
    "stream-channel-size",
    "direct-io",
    "cache-readdir",
    "entry-timeout-ms",
    "attr-timeout-ms",
    "negative-timeout-ms",
    "max-background",
    "congestion-threshold",
    "node-cache-timeout",
    "web-port",
    "read-dir-fill-ino",
    "write-back-cache",
    "non-seekable",
    "check-permission",
    "metrics-enabled",
    "enable-meta-cache",
    "meta-cache-ttl",
    "remember",
    "list-limit",
    "client.ttl-ms",
    "client.ttl-action",
}

MountKey = tuple[str, str, tuple[tuple[str, str], ...]]


class CsiError(Exception):
    """A gRPC error the node service answers with: ``code`` is its status code name."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code


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


def provisioned_handle(context: dict[str, str], pv_name: str) -> str:
    """The handle CreateVolume gives a volume (volume_handle.go GenerateVolumeHandle)."""
    return f"cluster@{context.get('fs-path') or '/'}@{pv_name}"


def flags(context: dict[str, str]) -> dict[str, str]:
    """What NodeStageVolume hands curvine-fuse as ``--<key> <value>``."""
    return {
        k: v
        for k, v in context.items()
        if v and k not in OWNED | REJECTED and not k.startswith(KUBERNETES_PREFIXES)
    }


def mount_key(context: dict[str, str]) -> MountKey:
    return (
        context["master-addrs"],
        context.get("fs-path") or "/",
        tuple(sorted(flags(context).items())),
    )


def _master_addrs(context: dict[str, str]) -> str:
    if not context.get("master-addrs"):
        raise CsiError("InvalidArgument", "master-addrs parameter is required")
    return context["master-addrs"]


def stage(volume_id: str, context: dict[str, str]) -> MountKey:
    """NodeStageVolume: the mount key of the FUSE process that serves the volume."""
    if REJECTED & context.keys():
        raise CsiError("InvalidArgument", f"Parameter {sorted(REJECTED & context.keys())}")
    _master_addrs(context)
    is_static = volume_id.count("@") != 2
    unknown = sorted(set(flags(context)) - FUSE_FLAGS)
    if unknown and is_static:
        raise CsiError("InvalidArgument", f"invalid fuse configuration: unexpected {unknown}")
    if unknown:
        # A provisioned volume skips validate-config: curvine-fuse itself exits on the flag.
        raise CsiError("Internal", f"Failed to start FUSE process: unexpected {unknown}")
    return mount_key(context)


def publish(volume_id: str, context: dict[str, str]) -> str:
    """NodePublishVolume: the path under the FUSE mount of ``fs-path`` bound into the Pod."""
    _master_addrs(context)
    curvine_path = context.get("curvine-path", "")
    if not curvine_path:
        raise CsiError("InvalidArgument", "curvine-path parameter is required")
    stage(volume_id, context)
    fs_path = context.get("fs-path") or "/"
    if fs_path != "/" and not curvine_path.startswith(fs_path):
        raise CsiError("Internal", f"curvine-path {curvine_path} does not match fs-path {fs_path}")
    return curvine_path[len(fs_path) :].strip("/") if fs_path != "/" else curvine_path.strip("/")


def fuse_processes(contexts: list[dict[str, str]]) -> dict[MountKey, int]:
    """The FUSE processes one node runs for the volumes staged there, each with the port its
    metrics server binds."""
    return {mount_key(c): int(flags(c).get("web-port", DEFAULT_WEB_PORT)) for c in contexts}
