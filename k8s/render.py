"""Write the Kubernetes layer of one environment as plain YAML.

    python -m k8s.render --env dev --out dist/dev

Writes one file per chart in apply order (``00-namespaces.yaml`` ...) and records the values that
cannot change after the first deploy in ``k8s/locks/<env>.json`` (commit it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from infra.config import ConfigError, load_config
from infra.config.kvcache import LOCK_DIR, lock_of
from k8s.app import build_charts, manifests


def render(env: str, out: Path, lock_dir: Path = LOCK_DIR) -> list[Path]:
    config = load_config(env)  # refuses a config that disagrees with its lock
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.yaml"):
        old.unlink()
    written = []
    for name, objects in manifests(build_charts(config)).items():
        path = out / f"{name}.yaml"
        path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
        written.append(path)
    lock_dir.mkdir(parents=True, exist_ok=True)
    (lock_dir / f"{env}.json").write_text(json.dumps(lock_of(config), indent=2) + "\n")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="dev")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    try:
        paths = render(args.env, args.out or Path("dist") / args.env)
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    for p in paths:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
