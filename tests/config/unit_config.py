"""dev.yaml as a raw mapping under an environment without a lock, and the one line a change to it
gets refused with: what the config-rule tests build on.

The environment is ``unit`` because k8s/locks/ holds no lock for it: a lock pins what may not
change after a first deploy and would hide the rules under test.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from infra.config import ConfigError, parse_config
from infra.config.loader import CONFIG_DIR

SOURCE = "config/unit.yaml"
BASE: dict[str, Any] = {**yaml.safe_load((CONFIG_DIR / "dev.yaml").read_text()),
                        "environment": "unit"}  # fmt: skip


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


def refusal(overrides: dict[str, Any]) -> str | None:
    """The line that refuses BASE with ``overrides`` (always one line), or None if accepted."""
    try:
        parse_config(with_overrides(overrides), SOURCE, "unit")
    except ConfigError as err:
        assert "\n" not in str(err)
        return str(err)
    return None
