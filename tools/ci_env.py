"""Print what a CI job needs to deploy an environment, as KEY=VALUE lines (GitHub outputs).

Usage: python -m tools.ci_env --env test [--pipeline-env prod]
The deploy role is the one the pipeline stack creates for GitHub Actions
(``pipeline.github_actions.deploy_role_name`` in the pipeline environment's config).
"""

from __future__ import annotations

import argparse
import sys

from infra.config import ConfigError, load_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True, help="environment to deploy")
    parser.add_argument("--pipeline-env", default="prod", help="config holding pipeline:")
    args = parser.parse_args(argv)
    try:
        target = load_config(args.env)
        pipeline = load_config(args.pipeline_env).pipeline
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    role = pipeline.github_actions.deploy_role_name
    if role is None:
        print(
            f"error: config/{args.pipeline_env}.yaml: pipeline.github_actions.deploy_role_name "
            "= (missing): allowed: an IAM role name; fix: set it and deploy the pipeline stack "
            "(make pipeline) so the role exists",
            file=sys.stderr,
        )
        return 2
    print(f"role_arn=arn:aws:iam::{target.account}:role/{role}")
    print(f"region={target.region}")
    print(f"eks_cluster={target.eks.cluster_name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
