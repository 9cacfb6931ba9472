"""What lands on one GPU node, in CPU and memory requests: what EKS and HyperPod run on every
node, this app's own per-node workloads, one vLLM replica with the operator's sidecars, and the
memory Tiered Storage reserves on the instance. It must fit the node's allocatable
(infra/facts/instances.py); the config rule (infra/config/rules_budget.py) refuses a config where it
does not, and tests/k8s/test_rehearsal_budget.py checks that the rendered objects request what
this module counts.

The requests of this app's small fixed containers are defined here and used by the charts
(k8s/csi.py, k8s/l2_volume.py), so the rule and the objects cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.config.kvcache import EndpointConfig
from infra.config.model import AppConfig
from infra.facts.instances import GPU_INSTANCES


@dataclass(frozen=True)
class Requests:
    cpu_millicores: int
    memory_mib: int


# (cpu millicores, memory MiB) requested on every node by what EKS and HyperPod install.
# "est." = upstream sets no request (or none we could confirm offline): a conservative estimate,
# rounded up from the upstream charts' sidecar defaults.
NODE_DAEMONS: dict[str, tuple[int, int, str]] = {
    "aws-node (VPC CNI + network policy agent)": (
        50,
        256,
        "cpu 25m per container: aws/amazon-vpc-cni-k8s charts/aws-vpc-cni values.yaml; memory est.",
    ),
    "kube-proxy": (100, 128, "cpu 100m: EKS kube-proxy add-on manifest; memory est."),
    "eks-pod-identity-agent": (50, 128, "est."),
    "ebs-csi-node (plugin, registrar, liveness probe)": (
        30,
        120,
        "10m/40Mi per container: kubernetes-sigs/aws-ebs-csi-driver chart defaults",
    ),
    "s3-csi-node (Mountpoint, plus one mount Pod for the model bucket)": (200, 512, "est."),
    "fsx-csi-node (plugin, registrar, liveness probe)": (100, 256, "est."),
    "hyperpod health-monitoring-agent": (500, 512, "est."),
    "nvidia-device-plugin": (50, 128, "est."),
    "efa-device-plugin": (50, 128, "est."),
    "ai-toolkit (Tiered Storage daemon)": (500, 1024, "est.; its reserved memory is counted below"),
}

# The operator renders these next to the model container (tests/k8s/fixtures/operator_pod.yaml);
# their requests are not documented: placeholder estimates.
OPERATOR_SIDECARS: dict[str, tuple[int, int]] = {
    "reverse-proxy (est.)": (250, 256),
    "otel-collector (est.)": (250, 256),
}

# This app's fixed-size containers on GPU nodes (the charts use these).
CSI_REGISTRAR = Requests(20, 64)  # node-driver-registrar beside the Curvine CSI node plugin
L2_EVICTOR = Requests(100, 128)  # the L2 evictor CronJob, one per shared pool


@dataclass(frozen=True)
class Piece:
    what: str
    cpu_millicores: int
    memory_mib: int


def own_pieces(app: AppConfig) -> list[Piece]:
    """This app's per-node workloads on a GPU node, as the charts render them."""
    kv = app.kvcache
    pieces = []
    if "curvine" in kv.l2_backends:
        w, fuse = kv.curvine.worker, kv.curvine.fuse
        pieces.append(Piece("DaemonSet curvine-worker", w.cpu_millicores, w.memory_mib))
        pieces.append(
            Piece(
                "DaemonSet curvine-csi-node (FUSE node plugin and registrar)",
                fuse.cpu_request_millicores + CSI_REGISTRAR.cpu_millicores,
                fuse.memory_request_mib + CSI_REGISTRAR.memory_mib,
            )
        )
    if kv.mounted_l2_backend is not None:
        # One evictor over the whole shared pool (k8s.l2_volume), whichever node its Job lands on.
        pieces.append(Piece("CronJob L2 evictor", L2_EVICTOR.cpu_millicores, L2_EVICTOR.memory_mib))
    return pieces


def gpu_node_pieces(app: AppConfig, endpoint: EndpointConfig) -> list[Piece]:
    """Everything on one GPU node that runs a replica of ``endpoint``."""
    pieces = [Piece(f"{name} [{why}]", c, m) for name, (c, m, why) in NODE_DAEMONS.items()]
    pieces += own_pieces(app)
    pieces.append(
        Piece(f"vLLM replica of {endpoint.name}", endpoint.cpu * 1000, endpoint.memory_gib * 1024)
    )
    pieces += [Piece(name, c, m) for name, (c, m) in OPERATOR_SIDECARS.items()]
    if app.tiered_storage.mode == "Enable":
        share = app.tiered_storage.instance_memory_allocation_percentage
        inst = GPU_INSTANCES[app.hyperpod.gpu_group.instance_type]
        pieces.append(
            Piece(
                f"Tiered Storage ({share}% of instance memory, counted as taken)",
                0,
                inst.memory_gib * 1024 * share // 100,
            )
        )
    return pieces


def replicas_per_node(app: AppConfig, endpoint: EndpointConfig) -> int:
    """How many replicas of ``endpoint`` one GPU node holds: by its GPUs (tensor-parallel size
    each) and by the CPU and memory left once what runs on every node is counted; 0 when not
    even one fits (the node budget rule says why)."""
    inst = GPU_INSTANCES[app.hyperpod.gpu_group.instance_type]
    pieces = gpu_node_pieces(app, endpoint)
    replica = [p for p in pieces if p.what == f"vLLM replica of {endpoint.name}"]
    replica += [p for p in pieces if p.what in OPERATOR_SIDECARS]
    fixed = [p for p in pieces if p not in replica]
    per_cpu = sum(p.cpu_millicores for p in replica)
    per_mem = sum(p.memory_mib for p in replica)
    room_cpu = inst.allocatable_cpu_millicores - sum(p.cpu_millicores for p in fixed)
    room_mem = inst.allocatable_memory_mib - sum(p.memory_mib for p in fixed)
    return max(
        0, min(inst.gpus // endpoint.tensor_parallel_size, room_cpu // per_cpu, room_mem // per_mem)
    )
