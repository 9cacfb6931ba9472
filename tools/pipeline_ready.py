"""Say in one line what `make pipeline-synth` needs when the environment's config defines no
pipeline, before anything in cdk.out/ is deleted.

Usage: python -m tools.pipeline_ready --env prod   (exit 0: defined; 2: not, with the line)
"""

from __future__ import annotations

import argparse
import sys

from infra.config import ConfigError, load_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True, help="reads config/<env>.yaml")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.env)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not config.pipeline.enabled:
        print(
            f"error: config/{args.env}.yaml defines no pipeline (pipeline.enabled is false): "
            "`make pipeline-synth` needs a pipeline section with enabled: true, connection_arn "
            "and repository (docs/cicd.md)",
            file=sys.stderr,
        )
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
