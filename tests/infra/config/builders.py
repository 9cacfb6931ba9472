"""dev.yaml as a raw mapping, and the one line a change to it gets refused with: what the
config-rule tests build on.

``parse_config`` checks a lock only when it is given one, so these parse as ``dev`` whatever
k8s/locks/dev.json records; the lock tests pass the lock they mean.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from infra.config import ConfigError, parse_config
from infra.config.loader import CONFIG_DIR

SOURCE = "config/dev.yaml"
ENV = "dev"
BASE: dict[str, Any] = yaml.safe_load((CONFIG_DIR / "dev.yaml").read_text())


def with_overrides(overrides: dict[str, Any]) -> dict[str, Any]:
    """BASE with each ``a.b.0.c`` path set (a number indexes a list)."""
    raw = copy.deepcopy(BASE)
    for path, value in overrides.items():
        node: Any = raw
        *parents, leaf = path.split(".")
        for key in parents:
            if isinstance(node, list):
                node = node[int(key)]
            else:
                node = node.setdefault(key, [{}] if key == "endpoints" else {})
        node[leaf] = value
    return raw


def refusal(overrides: dict[str, Any], lock: dict[str, Any] | None = None) -> str | None:
    """The line that refuses BASE with ``overrides`` (always one line), or None if accepted;
    ``lock``: the environment's lock file as it would read."""
    try:
        parse_config(with_overrides(overrides), SOURCE, ENV, lock=lock)
    except ConfigError as err:
        assert "\n" not in str(err)
        return str(err)
    return None
