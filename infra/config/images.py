"""What the vLLM images the app knows of carry, for the check that an endpoint's image serves its
L2 backend.

The ``lmcache/vllm-openai`` tags install LMCache and vLLM unpinned at build time (LMCache's
``docker/Dockerfile``, stage ``image-release``), so the versions below are the releases that were
current when each tag was built: inferred from PyPI upload dates (v0.4.7: from a user who read
it on a node), not read from the images here (docs/verification.md has the one-liner that reads
them on a node). An image not listed here is not checked.

- ``sagemaker-hyperpod://`` (the connector of ``l2_backend: tieredstorage``) first ships in
  LMCache 0.3.9.post1.
- A failed L2 read is recomputed only with LMCache >= 0.3.9.post1 (it reports the failed blocks)
  and vLLM >= 0.11.1 (it reschedules them); vLLM 0.13.0 adds ``kv_load_failure_policy``
  (default ``recompute``), 0.17.0 makes ``fail`` the default. Without it the request runs on KV
  blocks that were never filled: wrong output, no error.

``SUPPORTED`` are the tags the runtime layer runs (tests/runtime/requirements/<tag>.txt: their
LMCache and vLLM judge what the app renders); the others are known, and checked, but not run.
The supported images take the same env (every ``LMCACHE_*`` variable the app renders parses the
same in LMCache 0.3.15 and 0.4.7) and the same ``vllm serve`` arguments (the app sets
``--gpu-memory-utilization``, whose default moved from 0.9 to 0.92 in vLLM 0.23).
"""

from __future__ import annotations

from dataclasses import dataclass

from infra.config.image_reference import BadReference, parse_image

REPOSITORY = "lmcache/vllm-openai"
# LMCache's CPU cache size when LMCACHE_MAX_LOCAL_CPU_SIZE does not reach it (``max_local_cpu_size``
# in lmcache/v1/config.py, GiB; the runtime layer reads it from the LMCache of each image).
LMCACHE_DEFAULT_L1_GIB = 5.0


@dataclass(frozen=True)
class ImageFacts:
    lmcache: str
    vllm: str
    hyperpod_connector: bool
    """LMCache has the ``sagemaker-hyperpod://`` connector."""
    recomputes_failed_loads: bool
    """vLLM recomputes what a failed KV load left unfilled, with LMCache reporting it."""
    failure_policy: bool
    """vLLM accepts ``kv_load_failure_policy`` in ``--kv-transfer-config``."""
    cuda: str = "12.8"
    """The image's CUDA (LMCache's docker/Dockerfile: ``CUDA_VERSION``): 13.0 from v0.4.5 (not the
    ``-cu129`` tags), which needs a node driver that supports CUDA 13."""
    python: tuple[int, int] = (3, 12)
    """The image's Python (LMCache's docker/Dockerfile: ``PYTHON_VERSION=3.12``). From 3.12
    ``hash(None)`` is a constant, which LMCache's default chunk hash relies on, with
    PYTHONHASHSEED, to give every replica the same keys."""


KNOWN: dict[str, ImageFacts] = {
    "v0.3.9": ImageFacts("0.3.9", "0.11.0", False, False, False),
    "v0.3.10": ImageFacts("0.3.10", "0.11.2", True, True, False),
    "v0.3.11": ImageFacts("0.3.11", "0.12.0", True, True, False),
    "v0.3.12": ImageFacts("0.3.12", "0.13.0", True, True, True),
    "v0.3.13": ImageFacts("0.3.13", "0.15.0", True, True, True),
    "v0.3.14": ImageFacts("0.3.14", "0.15.1", True, True, True),
    "v0.3.15": ImageFacts("0.3.15", "0.16.0", True, True, True),
    # Built with vLLM 0.23.0 (read on a HyperPod node by an operator user). LMCache 0.4.7 also
    # restores the PD backend fix that 0.4.4-0.4.6 lost (the app runs no PD backend).
    "v0.4.7": ImageFacts("0.4.7", "0.23.0", True, True, True, cuda="13.0"),
}
SUPPORTED = ("v0.4.7", "v0.3.15")
RECOMMENDED = f"{REPOSITORY}:{SUPPORTED[0]}"
# Tags that cannot serve at all, whatever the backend.
BROKEN: dict[str, str] = {
    "v0.5.5-cu129": "installs a CUDA 13 vLLM beside a CUDA 12.9 torch: vLLM fails to load at "
    "Pod start",
}


def tag_of(image: str) -> str | None:
    """The tag of ``image`` when it is one of LMCache's ``lmcache/vllm-openai`` images, from
    whatever registry: Docker Hub, or a mirror that keeps the repository path (an ECR copy at
    ``<account>.dkr.ecr.<region>.amazonaws.com/lmcache/vllm-openai``, or under a prefix such as
    a pull-through cache's ``docker-hub/lmcache/vllm-openai``); else None."""
    try:
        ref = parse_image(image)
    except BadReference:
        return None
    if ref.path != REPOSITORY and not ref.path.endswith(f"/{REPOSITORY}"):
        return None
    return ref.tag


def mirrored(image: str) -> bool:
    """Whether ``image`` is LMCache's, served by a registry other than Docker Hub."""
    if tag_of(image) is None:
        return False
    return parse_image(image).registry not in (None, "docker.io", "index.docker.io")


def facts(image: str) -> ImageFacts | None:
    """The known facts of ``image``, else None."""
    tag = tag_of(image)
    return None if tag is None else KNOWN.get(tag)


def shortfall(image: str, backend: str, args: tuple[str, ...]) -> tuple[str, bool] | None:
    """Why ``image`` cannot serve an endpoint on ``backend`` with ``args`` and whether dropping
    ``kv_load_failure_policy`` from the args is a fix too; None when it can."""
    tag = tag_of(image)
    if tag in BROKEN:
        return f"{image} {BROKEN[tag]}", False
    known = facts(image)
    if known is None:
        return None
    what = f"{image} (LMCache {known.lmcache}, vLLM {known.vllm})"
    if backend == "tieredstorage" and not known.hyperpod_connector:
        return f"{what} has no sagemaker-hyperpod:// connector (LMCache 0.3.9.post1+)", False
    if backend != "none" and not known.recomputes_failed_loads:
        return (
            f"{what} does not recompute a failed L2 read: the request runs on unfilled KV "
            "blocks (vLLM 0.11.1+ with LMCache 0.3.9.post1+)",
            False,
        )
    if not known.failure_policy and any("kv_load_failure_policy" in a for a in args):
        return f"{what} has no kv_load_failure_policy (vLLM 0.13.0+)", True
    return None
