"""Whether the GPU nodes' NVIDIA driver runs the CUDA the endpoints' images are built on.

The default image, ``lmcache/vllm-openai:v0.4.7``, is built on CUDA 13.0 (``infra.config.images``
``ImageFacts.cuda``), which needs a driver of the 580 branch or later; on an older one its torch
stops at start ("The NVIDIA driver on your system is too old (found version 12080)", the CUDA
version the driver supports, 12.8 here), and the Pod restarts for ever.

Where the driver is read, and why there:

- The node's labels from NVIDIA's GPU feature discovery, ``nvidia.com/cuda.runtime-version.
  major``/``minor`` (the CUDA version the driver supports; ``nvidia.com/cuda.runtime.*`` before
  GFD renamed them) with ``nvidia.com/cuda.driver-version.full``. HyperPod's dependencies chart
  installs NVIDIA's device plugin (chart 0.16.1) without GFD (``gfd.enabled`` is the chart's
  default, false; the GPU operator, which would add it, is off), and HyperPod labels its nodes
  with no driver version, so a HyperPod cluster carries these only where its owner runs GFD.
- After a deploy, the endpoint's own Pods (``verify``): a Pod whose model container runs the
  image and is Ready has run its CUDA on that node; one that failed says so in its log.
  ``nvidia-smi`` in a Pod would read the driver directly, but needs ``pods/exec`` and a stream the
  client opens over a websocket, while a Pod's readiness and its log are plain reads the rest of
  ``verify`` already makes.

A node neither tells is not known: ``preflight`` and ``verify`` warn and give the command that
reads it on the node.
"""

from __future__ import annotations

import re
from typing import Any

from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from infra.config.images import facts
from infra.config.kvcache import EndpointConfig
from scripts.lib.checks import Check
from scripts.lib.clients import Clients
from scripts.lib.errors import OperationError
from scripts.lib.kube import (
    find_endpoint_deployment,
    gpu_nodes,
    model_container_index,
    pod_ready,
    pods_of,
)

STAGE = "GPU driver"
# GPU feature discovery's labels of the CUDA version the driver supports: current, then former.
CUDA_LABELS = (
    ("nvidia.com/cuda.runtime-version.major", "nvidia.com/cuda.runtime-version.minor"),
    ("nvidia.com/cuda.runtime.major", "nvidia.com/cuda.runtime.minor"),
)
DRIVER_LABEL = "nvidia.com/cuda.driver-version.full"
# The oldest driver branch each CUDA major runs on (NVIDIA's CUDA minor version compatibility).
DRIVER_BRANCH = {13: 580, 12: 525}
# What the image's torch, or the CUDA runtime itself, prints when the driver is too old.
TOO_OLD = re.compile(r"NVIDIA driver on your system is too old \(found version (\d+)\)")
INSUFFICIENT = "CUDA driver version is insufficient for CUDA runtime version"
READ_ON_NODE = (
    "kubectl debug node/{node} -it --image=public.ecr.aws/docker/library/busybox:1.36 -- "
    "chroot /host nvidia-smi --query-gpu=driver_version --format=csv,noheader"
)

Cuda = tuple[int, int]


def _cuda(text: str) -> Cuda:
    major, _, minor = text.partition(".")
    return int(major), int(minor or 0)


def node_cuda(node: dict[str, Any]) -> Cuda | None:
    """The CUDA version the node's driver supports, from GFD's labels; None without them."""
    labels = node["metadata"].get("labels") or {}
    for major, minor in CUDA_LABELS:
        if labels.get(major, "").isdigit():
            return int(labels[major]), int(labels.get(minor, "0") or 0)
    return None


def image_cuda(images: list[str]) -> tuple[Cuda, str] | None:
    """The newest CUDA among ``images`` the app knows, with the image built on it."""
    known = [(_cuda(f.cuda), image) for image in images if (f := facts(image)) is not None]
    return max(known) if known else None


def _shown(cuda: Cuda) -> str:
    return f"{cuda[0]}.{cuda[1]}"


def _model(pod: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The model container of ``pod`` and its status."""
    index = model_container_index(pod["spec"])
    if index is None:
        return None
    container = pod["spec"]["containers"][index]
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        if status.get("name") == container["name"]:
            return container, status
    return container, {}


def _refusal(clients: Clients, pod: dict[str, Any], container: str, restarts: int) -> str | None:
    """What the model container's log says of the driver, when it says anything."""
    meta = pod["metadata"]
    log = clients.core().read_namespaced_pod_log(
        meta["name"], meta["namespace"], container=container, previous=restarts > 0
    )
    if found := TOO_OLD.search(log or ""):
        version = int(found[1])
        return f"the driver supports CUDA {version // 1000}.{version % 1000 // 10}"
    return "the CUDA runtime found the driver too old" if INSUFFICIENT in (log or "") else None


Model = tuple[dict[str, Any], tuple[dict[str, Any], dict[str, Any]]]


def _pods(clients: Clients, ref: EndpointConfig | None) -> list[Model]:
    """The endpoint's Pods that have a model container, each with it and its status."""
    dep = find_endpoint_deployment(clients, ref) if ref is not None else None
    found = pods_of(clients, dep) if dep else []
    return [(pod, model) for pod in found if (model := _model(pod)) is not None]


def check_gpu_driver(clients: Clients, cfg: AppConfig, ref: EndpointConfig | None = None) -> Check:
    """Every GPU node's driver against the newest CUDA of the images: all endpoints' (``ref``
    None: before a deploy, labels only), or the one endpoint's, whose Pods show it too."""
    try:
        return _check(clients, cfg, ref)
    except (ApiException, OperationError) as exc:
        why = f"Kubernetes API: {exc.status} {exc.reason}" if isinstance(exc, ApiException) else exc
        return Check(
            STAGE,
            "warn",
            f"cannot read the GPU nodes ({why})",
            "aws eks update-kubeconfig --name <cluster> --region <region>, then run it again",
        )


def _check(clients: Clients, cfg: AppConfig, ref: EndpointConfig | None) -> Check:
    pods = _pods(clients, ref)
    configured = [ref] if ref is not None else cfg.kvcache.endpoints
    need = image_cuda([c["image"] for _, (c, _) in pods] or [e.image for e in configured])
    if need is None:
        return Check(STAGE, "skip", "no image whose CUDA is known (infra/config/images.py)")
    cuda, image = need
    nodes = gpu_nodes(clients, cfg)
    if not nodes:
        return Check(STAGE, "skip", "no GPU node yet")
    wants = (
        f"{image} is built on CUDA {_shown(cuda)}: a {DRIVER_BRANCH.get(cuda[0], '?')} or "
        "later driver"
    )
    supports = {n["metadata"]["name"]: node_cuda(n) for n in nodes}
    drivers = {
        n["metadata"]["name"]: (n["metadata"].get("labels") or {}).get(DRIVER_LABEL, "?")
        for n in nodes
    }
    short = [
        f"{name} (driver {drivers[name]}, CUDA {_shown(has)})"
        for name, has in supports.items()
        if has is not None and has[0] < cuda[0]
    ]
    ours = [
        (pod, container, status) for pod, (container, status) in pods if container["image"] == image
    ]
    for pod, container, status in ours:
        if pod_ready(pod) or status.get("ready", True):
            continue  # running (or no status to read): its log has nothing to say of the driver
        why = _refusal(clients, pod, container["name"], int(status.get("restartCount") or 0))
        if why is not None:
            short.append(f"Pod {pod['metadata']['name']} on {pod['spec'].get('nodeName')}: {why}")
    if short:
        return Check(
            STAGE,
            "fail",
            f"{'; '.join(short)}; {wants}",
            "update the GPU nodes' AMI (aws sagemaker update-cluster-software), or run "
            "an image built on CUDA 12 (lmcache/vllm-openai:v0.3.15) on those "
            "endpoints (kvcache.endpoints[].image)",
        )
    ran = {pod["spec"].get("nodeName") for pod, _, _ in ours if pod_ready(pod)}
    unknown = sorted(n for n, has in supports.items() if has is None and n not in ran)
    if unknown:
        seen = "" if ref is None else f" and no Ready Pod of {image}"
        return Check(
            STAGE,
            "warn",
            f"{', '.join(unknown)}: no GPU feature discovery labels{seen}; {wants}",
            f"read it on the node: {READ_ON_NODE.format(node=unknown[0])}",
        )
    return Check(STAGE, "pass", f"{len(nodes)} GPU node(s) run CUDA {cuda[0]}: {wants}")
