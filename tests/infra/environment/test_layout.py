"""Every stack's name comes from one helper: the app names its stacks with it, teardown, preflight
and the output readers look them up with it (pure; the synthesized names are checked against it
in tests/stacks/test_deploy_layout.py)."""

from __future__ import annotations

import pytest

from infra.config import load_config
from infra.environment.amp_workspace import observability_stack_name
from infra.environment.fsx import kvcache_stack_name
from infra.environment.layout import STACK_SUFFIXES, stack_name
from scripts.lib.environment import network_stack, stack_names


def test_each_stack_has_its_own_name_under_the_environments_prefix() -> None:
    config = load_config("dev")
    names = [stack_name(config, suffix) for suffix in STACK_SUFFIXES]
    assert len(set(names)) == len(names)
    assert all(n.startswith(f"{config.stack_prefix}-") for n in names)
    assert sorted(stack_names(config)) == sorted(names)


def test_the_readers_look_up_the_stacks_the_app_names() -> None:
    config = load_config("test")
    assert kvcache_stack_name(config) == stack_name(config, "kvcache")
    assert observability_stack_name(config) == stack_name(config, "observability")
    assert network_stack(config) == stack_name(config, "network")


def test_a_stack_the_layout_does_not_have_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown stack suffix 'kv-cache'; known: network"):
        stack_name(load_config("dev"), "kv-cache")
