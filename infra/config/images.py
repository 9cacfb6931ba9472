"""What the vLLM images the app knows of carry, for the check that an endpoint's image serves its
L2 backend.

The ``lmcache/vllm-openai`` tags install LMCache and vLLM unpinned at build time (LMCache's
``docker/Dockerfile``, stage ``image-release``), so the versions below are the releases that were
current when each tag was built: inferred from PyPI upload dates, not read from the images
(docs/verification.md has the one-liner that reads them on a node). An image not listed here is
not checked.

- ``sagemaker-hyperpod://`` (the connector of ``l2_backend: tieredstorage``) first ships in
  LMCache 0.3.9.post1.
- A failed L2 read is recomputed only with LMCache >= 0.3.9.post1 (it reports the failed blocks)
  and vLLM >= 0.11.1 (it reschedules them); vLLM 0.13.0 adds ``kv_load_failure_policy``
  (default ``recompute``), 0.17.0 makes ``fail`` the default. Without it the request runs on KV
  blocks that were never filled: wrong output, no error.
"""

from __future__ import annotations

from dataclasses import dataclass

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
}
RECOMMENDED = f"{REPOSITORY}:v0.3.15"


def facts(image: str) -> ImageFacts | None:
    """The known facts of ``image`` (``repo:tag`` with or without ``@digest``), else None."""
    name = image.split("@", 1)[0]
    repo, _, tag = name.rpartition(":")
    if repo.removeprefix("docker.io/") != REPOSITORY:
        return None
    return KNOWN.get(tag)


def shortfall(image: str, backend: str, args: tuple[str, ...]) -> tuple[str, bool] | None:
    """Why ``image`` cannot serve an endpoint on ``backend`` with ``args`` and whether dropping
    ``kv_load_failure_policy`` from the args is a fix too; None when it can."""
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
