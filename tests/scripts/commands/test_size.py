"""`hpkv size`: the environment's config mapped to the sizing model, its JSON and tables, and its
exit codes. No double: typer's CliRunner in process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scripts.cli import app
from scripts.lib import runtime
from scripts.lib.sizing import (
    GIB,
)
from tests.support.config import make_cfg
from tests.support.sizing import QWEN2_7B_CONFIG

runner = CliRunner()


def test_cli_json_from_a_config_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN2_7B_CONFIG))
    result = runner.invoke(app, ["size", str(path), "--json", "--l2-worker-gib", "400"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)  # exactly one JSON object
    assert data["kv_bytes_per_token"] == 57_344
    assert data["params_source"] == "architecture"
    tiers = {t["name"]: t for t in data["tiers"]}
    # dev.yaml's endpoint: a 64 GiB Pod less vLLM's 10 GiB -> 54 GiB of L1; Tiered Storage's
    # 20% of ml.g6e.4xlarge's 128 GiB is the tieredstorage L2, not L1.
    assert tiers["L1"]["bytes"] == 54 * GIB
    assert tiers["L1"]["tokens"] == 54 * GIB // 57_344
    assert tiers["L2 tieredstorage"]["bytes"] == int(128 * 0.2 * GIB)
    # L2: worker capacity x 2 GPU nodes.
    assert tiers["L2"]["bytes"] == 400 * GIB * 2
    assert tiers["L2"]["tokens"] == 400 * GIB * 2 // 57_344
    assert data["fits"] is True and data["flags"] == []


def test_cli_params_override_and_flags() -> None:
    # 600 tokens recomputed at 1e9 tokens/s: no L2 read back is faster.
    result = runner.invoke(
        app,
        [
            "size",
            "llama-3.1-70b",
            "--json",
            "--params",
            "7.0e10",
            "--prompt-tokens",
            "600",
            "--prefill-tokens-per-s",
            "1e9",
        ],
    )
    data = json.loads(result.stdout)
    assert data["params"] == 70_000_000_000 and data["params_source"] == "--params"
    assert not data["fits"]  # 140 GB of weights on one 48 GB L40S
    assert any(f.startswith("model_does_not_fit") for f in data["flags"])
    assert data["tier_advice"]["recommendation"] == "none"
    assert any(f.startswith("l2_does_not_pay_off") for f in data["flags"])


def test_a_short_prompt_gets_one_verdict_per_tier_and_a_recommendation_that_agrees() -> None:
    """qwen2-7b, 500 tokens, dev: recomputing (estimated 0.076 s) loses to a Curvine read
    (0.015 s), so Curvine is recommended and nothing says an L2 does not pay off."""
    result = runner.invoke(app, ["size", "qwen2-7b", "--json", "--prompt-tokens", "500"])
    data = json.loads(result.stdout)
    advice = data["tier_advice"]
    verdicts = {r["tier"]: r["beats_recompute"] for r in advice["reads"]}
    assert set(verdicts) == {"l1", "curvine", "fsx_lustre", "tieredstorage"}
    assert advice["recommendation"] == "curvine" and verdicts["curvine"] is True
    assert not [f for f in data["flags"] if f.startswith("l2_does_not_pay_off")]


def test_cli_bad_input_exit_codes(tmp_path: Path) -> None:
    assert runner.invoke(app, ["size", str(tmp_path / "missing.json")]).exit_code == 2
    assert runner.invoke(app, ["size", "qwen2-7b", "--env", "nosuchenv"]).exit_code == 2


@pytest.mark.parametrize(
    ("kvcache", "args", "worker_gib"),
    [
        # kvcache.curvine.worker.capacity_gib
        ({"curvine": {"worker": {"capacity_gib": 123}}}, [], 123),
        # the override wins
        ({"curvine": {"worker": {"capacity_gib": 123}}}, ["--l2-worker-gib", "50"], 50),
        # no Curvine, no L2 pool
        ({"endpoints": [{"l2_backend": "none"}]}, [], 0),
    ],
)
def test_l2_worker_capacity_comes_from_config(
    monkeypatch: pytest.MonkeyPatch, kvcache: dict[str, Any], args: list[str], worker_gib: int
) -> None:
    cfg = make_cfg(kvcache=kvcache)
    monkeypatch.setattr(runtime, "load_config", lambda env: cfg)
    result = runner.invoke(app, ["size", "qwen2-7b", "--json", *args])
    assert result.exit_code == 0, result.output
    tiers = {t["name"]: t for t in json.loads(result.stdout)["tiers"]}
    assert tiers["L2"]["bytes"] == worker_gib * GIB * cfg.hyperpod.gpu_group.instance_count


def test_cli_prints_and_emits_the_advice() -> None:
    args = [
        "size",
        "qwen2-7b",
        "--prompt-tokens",
        "50000",
        "--sessions",
        "100",
        "--context-tokens",
        "100000",
        "--prefill-tokens-per-s",
        "10000",
    ]
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    advice = json.loads(result.output)["tier_advice"]
    assert advice["recommendation"] == "curvine" and advice["working_set_tb"] == 0.573
    text = CliRunner().invoke(app, args).output
    assert "recommend: curvine" in text and "working set: 100 sessions" in text


def test_a_measured_curvine_read_rate_replaces_the_posts_figure() -> None:
    """qwen2-7b, 500 tokens: 28,672,000 bytes. At the post's ~1.97 GB/s a Curvine read beats the
    estimated recompute; at a measured 100 MB/s it takes 0.287 s and does not."""
    argv = ["size", "qwen2-7b", "--json", "--prompt-tokens", "500"]
    post = json.loads(runner.invoke(app, argv).stdout)["tier_advice"]
    slow = json.loads(runner.invoke(app, [*argv, "--curvine-read-mb-per-s", "100"]).stdout)
    reads = {r["tier"]: r for r in slow["tier_advice"]["reads"]}
    assert reads["curvine"]["seconds"] == pytest.approx(500 * 57_344 / 100e6)
    assert not reads["curvine"]["beats_recompute"]
    assert {r["tier"]: r for r in post["reads"]}["curvine"]["beats_recompute"]
    assert slow["tier_advice"]["recommendation"] != "curvine"


@pytest.mark.parametrize(
    ("l2_backend", "l1_gib"),
    [
        ("curvine", 54),  # the L2 policy writes the size back: 64 GiB less vLLM's 10
        ("tieredstorage", 5),  # operator 3.2 drops it: LMCache's default
        ("none", 5),
    ],
)
def test_l1_is_what_lmcache_gets_in_the_container(
    monkeypatch: pytest.MonkeyPatch, l2_backend: str, l1_gib: int
) -> None:
    cfg = make_cfg(kvcache={"endpoints": [{"l2_backend": l2_backend}]})
    assert cfg.addons.inference_operator.operator.version == "3.2"
    monkeypatch.setattr(runtime, "load_config", lambda env: cfg)
    result = runner.invoke(app, ["size", "qwen2-7b", "--json"])
    assert result.exit_code == 0, result.output
    tiers = {t["name"]: t for t in json.loads(result.stdout)["tiers"]}
    assert tiers["L1"]["bytes"] == l1_gib * GIB


@pytest.mark.parametrize(("nodes", "fits"), [(None, False), ("3", True)])
def test_the_working_set_is_held_against_the_pool_of_every_gpu_node(
    nodes: str | None, fits: bool
) -> None:
    """200 sessions x 100,000 tokens of qwen2-7b: 1.147 TB of KV. dev pools 400 GiB of NVMe on
    each of its 2 GPU nodes (0.859 TB): too small; on 3 nodes (1.288 TB) it fits. One node's
    400 GiB (0.429 TB) is never what the working set is held against."""
    argv = [
        "size",
        "qwen2-7b",
        "--json",
        "--prompt-tokens",
        "50000",
        "--sessions",
        "200",
        "--context-tokens",
        "100000",
        "--prefill-tokens-per-s",
        "10000",
        *(["--gpu-nodes", nodes] if nodes else []),
    ]
    result = runner.invoke(app, argv)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    advice = data["tier_advice"]
    pool = 400 * GIB * (int(nodes) if nodes else 2)
    assert (
        advice["curvine_pool_bytes"] == pool == {t["name"]: t for t in data["tiers"]}["L2"]["bytes"]
    )
    assert advice["working_set_bytes"] == 200 * 100_000 * 57_344
    assert (advice["working_set_bytes"] <= pool) is fits
    assert advice["recommendation"] == "curvine"
    assert ("fits the NVMe pool" in advice["reason"]) is fits
