"""vLLM's own file tier (``OffloadingConnector`` with ``TieringOffloadingSpec`` and an ``fs``
secondary tier) on the L2 mount, as docs/architecture.md ("vLLM's own file tier") evaluates it:
the ``--kv-transfer-config`` that section shows, in the dev endpoint's container as the cluster
ends up with it (the operator's rendering, then the L2 policy's mount of the claim's subPath),
run through vLLM's own parser, config classes, spec factory and ``FileSystemTierManager``
(tests/runtime/oracles/vllm_fs_tier.py says what stands in for the GPU).

The image's vLLM comes from infra/config/images.py: one from 0.23.0 on must take the arguments and
write where the docs say, and a second replica must read back what the first wrote; one before it
must refuse the spec when the connector would start (its config classes take any extra config),
so the docs' claim that the tier needs vLLM 0.23 is checked on every image, not skipped.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from infra.config import AppConfig
from infra.config.images import REPOSITORY, facts
from tests.support.runtime import (
    QWEN3_8B,
    ROOT,
    Container,
    ask,
    container_of,
    endpoint_pod,
    needs_mount_namespace,
    operator_of,
)

pytestmark = needs_mount_namespace
Rendered = dict[str, tuple[AppConfig, list[dict[str, Any]]]]
FS_TIER_SINCE = (0, 23, 0)  # the secondary tier type "fs" (0.22.0 named it "fs_python")
DOC = ROOT / "docs" / "architecture.md"
SECTION = "### vLLM's own file tier"
BLOCKS = 3
# <model, '/' as '_'>_<12 hex>/config.json and <same>_r<rank>/<3 hex>/<2 hex>_g<group>/<hash>.bin
RUN_DIR = r"_opt_ml_model_[0-9a-f]{12}"
BLOCK_FILE = re.compile(
    rf"{RUN_DIR}_r0/([0-9a-f]{{3}})/([0-9a-f]{{2}})_g0/(\1\2[0-9a-f]{{59}})\.bin"
)


def documented_transfer_config() -> dict[str, Any]:
    """The ``--kv-transfer-config`` of the section (its one ``json`` block)."""
    text = DOC.read_text()
    section = text[text.index(SECTION) :]
    block = section.split("```json\n", 1)[1].split("```", 1)[0]
    config: dict[str, Any] = json.loads(block)
    return config


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v)[:3])


def _has_fs_tier(image: str, answer: dict[str, Any]) -> bool:
    """Whether the image's vLLM (infra/config/images.py, held to the one that answered) has the
    ``fs`` tier."""
    known = facts(f"{REPOSITORY}:{image}")
    if known is None:
        pytest.fail(f"{image}: not in infra/config/images.py KNOWN, so its vLLM is not known")
    assert answer["vllm"] == known.vllm, f"{image}: the runtime layer runs vLLM {answer['vllm']}"
    return _version(known.vllm) >= FS_TIER_SINCE


def _replica(rendered: Rendered, tmp: Path, pod_dir: str) -> Container:
    """The dev endpoint's model container with the documented kv-transfer-config, its claims
    under ``tmp/claims`` and the model's config.json where the operator puts the weights."""
    config, objs = rendered["dev"]
    e = config.kvcache.endpoints[0]
    c = container_of(endpoint_pod(objs, e, operator_of(config)), tmp / "claims", tmp / pod_dir)
    args = list(c.args)
    args[args.index("--kv-transfer-config") + 1] = json.dumps(documented_transfer_config())
    model = c.mounts[args[args.index("--model") + 1]]
    assert model is not None
    shutil.copy(QWEN3_8B / "config.json", model / "config.json")
    return Container(c.env, args, c.mounts, c.claims, c.own)


def _run(image: str, c: Container, role: str) -> dict[str, Any]:
    request = {"args": c.args, "model_dir": None, "role": role, "blocks": BLOCKS, "seed": 11}
    return ask(image, "vllm_fs_tier", request, c)


def _assert_refused(answer: dict[str, Any]) -> None:
    """vLLM before 0.23 parses the arguments and builds the engine config, then its
    ``OffloadingSpecFactory`` refuses the spec: the engine would not start."""
    assert answer["stage"] == "spec", answer
    assert "TieringOffloadingSpec" in answer["error"], answer


def test_the_documented_root_dir_is_the_l2_mount(rendered: Rendered) -> None:
    config, _ = rendered["dev"]
    (tier,) = documented_transfer_config()["kv_connector_extra_config"]["secondary_tiers"]
    assert (tier["type"], tier["root_dir"]) == ("fs", config.kvcache.l2_mount_path)


def test_the_fs_tier_writes_its_blocks_under_the_endpoints_subpath(
    image: str, rendered: Rendered, tmp_path: Path
) -> None:
    answer = _run(image, _replica(rendered, tmp_path, "pod-a"), "store")
    if not _has_fs_tier(image, answer):
        _assert_refused(answer)
        return
    assert answer["ok"] and answer["stored"], answer
    (claim,) = (tmp_path / "claims").iterdir()
    endpoint = rendered["dev"][0].kvcache.endpoints[0].name
    assert [p.name for p in claim.iterdir()] == [endpoint]
    on_disk = sorted(str(p.relative_to(claim / endpoint)) for p in claim.rglob("*") if p.is_file())
    assert on_disk == answer["files"]
    (run_config,) = [f for f in on_disk if f.endswith("config.json")]
    assert re.fullmatch(rf"{RUN_DIR}/config\.json", run_config)
    blocks = [BLOCK_FILE.fullmatch(f) for f in on_disk if f != run_config]
    assert all(blocks) and len(blocks) == BLOCKS
    assert {m.group(3) for m in blocks if m} == {k[:64] for k in answer["keys"]}


def test_what_one_replica_writes_the_other_reads_byte_equal(
    image: str, rendered: Rendered, tmp_path: Path
) -> None:
    stored = _run(image, _replica(rendered, tmp_path, "pod-a"), "store")
    read = _run(image, _replica(rendered, tmp_path, "pod-b"), "retrieve")
    if not _has_fs_tier(image, read):
        _assert_refused(read)
        return
    assert read["keys"] == stored["keys"]
    assert (read["lookup"], read["loaded"], read["equal"]) == (BLOCKS, BLOCKS, True), read


def test_replicas_without_the_same_hash_seed_share_nothing(
    image: str, rendered: Rendered, tmp_path: Path
) -> None:
    """vLLM seeds its block-hash chain from PYTHONHASHSEED (random without it): the 0 the
    endpoints' env sets is what makes the files of one replica the keys of another."""
    _run(image, _replica(rendered, tmp_path, "pod-a"), "store")
    other = _replica(rendered, tmp_path, "pod-b")
    assert other.env["PYTHONHASHSEED"] == "0"
    other.env["PYTHONHASHSEED"] = "1"
    read = _run(image, other, "retrieve")
    if not _has_fs_tier(image, read):
        _assert_refused(read)
        return
    assert read["ok"] and read["lookup"] == 0, read
