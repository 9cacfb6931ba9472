"""Facts about the HyperPod instance types the GPU group may use.

Sources: the Amazon EC2 G6e and P5 instance pages (GPU count and memory, system memory, local
NVMe instance store). The GPU group must have local NVMe: Curvine's L2 pool lives on it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuInstance:
    gpus: int
    gpu_memory_gib: int  # per GPU
    memory_gib: int  # system memory
    nvme_gb: int  # total local instance store


GPU_INSTANCES: dict[str, GpuInstance] = {
    # G6e: NVIDIA L40S, 48 GB each
    "ml.g6e.xlarge": GpuInstance(1, 48, 32, 250),
    "ml.g6e.2xlarge": GpuInstance(1, 48, 64, 450),
    "ml.g6e.4xlarge": GpuInstance(1, 48, 128, 600),
    "ml.g6e.8xlarge": GpuInstance(1, 48, 256, 900),
    "ml.g6e.12xlarge": GpuInstance(4, 48, 384, 3800),
    "ml.g6e.16xlarge": GpuInstance(1, 48, 512, 1900),
    "ml.g6e.24xlarge": GpuInstance(4, 48, 768, 3800),
    "ml.g6e.48xlarge": GpuInstance(8, 48, 1536, 7600),
    # P5: NVIDIA H100 80 GB; P5e/P5en: H200 141 GB
    "ml.p5.48xlarge": GpuInstance(8, 80, 2048, 30400),
    "ml.p5e.48xlarge": GpuInstance(8, 141, 2048, 30400),
    "ml.p5en.48xlarge": GpuInstance(8, 141, 2048, 30400),
}

GPU_FAMILIES = "G6e (ml.g6e.*) or P5 (ml.p5.*, ml.p5e.*, ml.p5en.*)"
