"""Facts about the HyperPod instance types the GPU group may use.

Sources: the Amazon EC2 G6e and P5 instance pages (aws.amazon.com/ec2/instance-types/g6e/ and
/p5/: GPU count and memory, vCPUs, system memory, local NVMe instance store). The GPU group must
have local NVMe: Curvine's L2 pool lives on it.

Allocatable (what the scheduler can hand to Pods) follows the EKS AMI's kubelet defaults
(awslabs/amazon-eks-ami, nodeadm/internal/kubelet/config.go, getCPUMillicoresToReserve and
getMemoryMebibytesToReserve; the AL2 bootstrap.sh used the same numbers): kube-reserved CPU is
6% of the first core, 1% of the second, 0.5% of the third and fourth and 0.25% of the rest;
kube-reserved memory is 11 MiB x maxPods + 255 MiB; no system-reserved; eviction-hard
memory.available 100 MiB. maxPods is taken as 250, the ceiling EKS recommends for nodes above 30
vCPUs, which is at least what the ENI-based default gives the G6e sizes here: a conservative
(larger) reservation.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuInstance:
    gpus: int
    gpu_memory_gib: int  # per GPU
    memory_gib: int  # system memory
    nvme_gb: int  # total local instance store
    vcpus: int

    @property
    def kube_reserved_cpu_millicores(self) -> int:
        total = self.vcpus * 1000
        reserved = 0.0
        for start, end, share in (
            (0, 1000, 0.06),
            (1000, 2000, 0.01),
            (2000, 4000, 0.005),
            (4000, total, 0.0025),
        ):
            reserved += max(0, min(total, end) - start) * share
        return int(reserved)

    @property
    def allocatable_cpu_millicores(self) -> int:
        return self.vcpus * 1000 - self.kube_reserved_cpu_millicores

    @property
    def allocatable_memory_mib(self) -> int:
        return self.memory_gib * 1024 - KUBE_RESERVED_MEMORY_MIB - EVICTION_HARD_MEMORY_MIB


MAX_PODS = 250
KUBE_RESERVED_MEMORY_MIB = 11 * MAX_PODS + 255
EVICTION_HARD_MEMORY_MIB = 100


GPU_INSTANCES: dict[str, GpuInstance] = {
    # G6e: NVIDIA L40S, 48 GB each
    "ml.g6e.xlarge": GpuInstance(1, 48, 32, 250, 4),
    "ml.g6e.2xlarge": GpuInstance(1, 48, 64, 450, 8),
    "ml.g6e.4xlarge": GpuInstance(1, 48, 128, 600, 16),
    "ml.g6e.8xlarge": GpuInstance(1, 48, 256, 900, 32),
    "ml.g6e.12xlarge": GpuInstance(4, 48, 384, 3800, 48),
    "ml.g6e.16xlarge": GpuInstance(1, 48, 512, 1900, 64),
    "ml.g6e.24xlarge": GpuInstance(4, 48, 768, 3800, 96),
    "ml.g6e.48xlarge": GpuInstance(8, 48, 1536, 7600, 192),
    # P5: NVIDIA H100 80 GB; P5e/P5en: H200 141 GB
    "ml.p5.48xlarge": GpuInstance(8, 80, 2048, 30400, 192),
    "ml.p5e.48xlarge": GpuInstance(8, 141, 2048, 30400, 192),
    "ml.p5en.48xlarge": GpuInstance(8, 141, 2048, 30400, 192),
}

GPU_FAMILIES = "G6e (ml.g6e.*) or P5 (ml.p5.*, ml.p5e.*, ml.p5en.*)"
