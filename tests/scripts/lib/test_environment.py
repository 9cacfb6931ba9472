"""What an environment's stacks are called, which is production, and which stack holds the network
(no double: pure functions of the config)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.environment.layout import STACK_DEPENDENCIES
from scripts.lib.environment import NETWORK_SUFFIX, is_prod, network_stack, stack_names
from tests.support.config import make_cfg
from tests.support.teardown_world import env_cfg


@pytest.mark.parametrize(
    "overrides",
    [
        {"environment": "production"},
        {"environment": "live", "termination_protection": True},
        {"environment": "live", "retain_stateful_resources": True},
    ],
)
def test_protected_environments_count_as_prod(overrides: dict[str, Any]) -> None:
    assert is_prod(make_cfg(**overrides))
    assert not is_prod(make_cfg(environment="test"))


def test_the_network_stack_is_the_layouts() -> None:
    assert NETWORK_SUFFIX in STACK_DEPENDENCIES
    assert network_stack(env_cfg()) in stack_names(env_cfg())
