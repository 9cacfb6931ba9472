"""Curvine reads every key of the config file the app renders: v0.4.1 drops keys it does not
define without a word (``tests/doubles/curvine_conf.py``), so a renamed key would leave Curvine
on its default, which for ``format_master``/``format_worker`` wipes the cache on every start."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import parse_config
from k8s.app import build_charts, manifests
from k8s.curvine import CONFIG_MAP
from tests.doubles.curvine_conf import ignored_keys
from tests.support.config import SOURCE, with_overrides


def _toml(overrides: dict[str, Any]) -> str:
    config = parse_config(with_overrides(overrides), SOURCE, "dev")
    objs = [o for objs in manifests(build_charts(config)).values() for o in objs]
    (cm,) = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == CONFIG_MAP]
    text: str = cm["data"]["curvine-cluster.toml"]
    return text


@pytest.mark.parametrize("masters", [1, 3])
def test_curvine_reads_every_key_of_the_rendered_config(masters: int) -> None:
    assert ignored_keys(_toml({"kvcache.curvine.master.replicas": masters})) == []


def test_the_model_of_curvine_drops_the_second_based_fuse_timeouts_v0_4_1_renamed() -> None:
    old = _toml({}) + "attr_timeout = 1.0\n"  # appended to the last table, [fuse]
    assert ignored_keys(old) == ["fuse.attr_timeout"]
