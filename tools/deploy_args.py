"""Extra ``cdk deploy`` arguments that follow from config: ``make deploy`` appends what this
prints (``python -m tools.deploy_args --env <env>``).

An add-on on ``adopt`` is already installed: CloudFormation can only take it over by importing
it (``--import-existing-resources``: resources with a static name and a Retain policy that
exist are imported instead of created). Without the flag its CreateAddon fails with "already
exists".
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from infra.config import AppConfig, ConfigError, load_config
from infra.config.addons import ADDON_KEYS
from infra.config.loader import CONFIG_DIR

IMPORT_EXISTING = "--import-existing-resources"


def adopted_addons(cfg: AppConfig) -> list[str]:
    """The ``addons.<key>`` sections on adopt (and managed by this app)."""
    if not cfg.addons.enabled:
        return []
    return [key for key in ADDON_KEYS if cfg.addons.settings(key).adopted]


def deploy_args(cfg: AppConfig) -> list[str]:
    return [IMPORT_EXISTING] if adopted_addons(cfg) else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True, help="reads config/<env>.yaml")
    parser.add_argument("--config-dir", type=Path, default=CONFIG_DIR, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        cfg = load_config(args.env, args.config_dir)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(" ".join(deploy_args(cfg)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
