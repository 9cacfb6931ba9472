"""Write config/schema.json, the JSON Schema of config/<env>.yaml, from the config model.

Usage: python -m tools.config_schema [--check]
Each config/*.yaml names it in its first line (``# yaml-language-server: $schema=schema.json``),
so editors with a YAML language server validate and complete its keys. A test fails when the
file is out of date with the model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from infra.config.model import AppConfig

SCHEMA = Path(__file__).resolve().parents[1] / "config" / "schema.json"
MODELINE = "# yaml-language-server: $schema=schema.json"


def schema() -> dict[str, Any]:
    """AppConfig's JSON Schema (draft 2020-12) with an id and a pointer to the reference."""
    body = AppConfig.model_json_schema(mode="validation")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "config/<env>.yaml of hyperpod-kvcache",
        "description": "Generated from infra/config/model.py by `make docs`; do not edit. Rules "
        "that span fields (for example L2 needs Tiered Storage) are checked at synth, not here; "
        "see docs/configuration.md.",
        **{k: v for k, v in body.items() if k != "title"},
    }


def text() -> str:
    return json.dumps(schema(), indent=2, sort_keys=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    new = text()
    if args.check:
        if not SCHEMA.is_file() or SCHEMA.read_text() != new:
            print("config/schema.json is stale: run `make docs`", file=sys.stderr)
            return 1
        return 0
    SCHEMA.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
