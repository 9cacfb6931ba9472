"""A rule across two environments' configs: the delivery pipeline (in the config of the
environment it ends with) and the test environment it deploys, verifies and recreates."""

from __future__ import annotations

from infra.config.eks import ANY_ADDRESS
from infra.config.errors import ConfigError
from infra.config.model import AppConfig

# Why the pipeline's builds cannot run inside the test environment's VPC instead: the nightly
# recreate deletes that VPC (and the pipeline stack cannot name a VPC of another stage).
OUTSIDE_VPC = (
    "CodeBuild runs them outside the VPC, since the nightly recreate deletes the test "
    "environment's VPC, and reaches the public API endpoint from CodeBuild's addresses"
)


def check_pipeline_reaches_test(config: AppConfig, test: AppConfig) -> None:
    """The pipeline's verify step and nightly recreate call the test cluster's API from
    CodeBuild, outside the VPC: refuse a test environment whose endpoint would not answer them
    (private, or a public endpoint narrowed to a list without 0.0.0.0/0; CodeBuild's addresses
    are not known offline). An existing cluster's endpoint is its owner's."""
    pipeline = config.pipeline
    steps = [
        name
        for name, on in (
            ("nightly_recreate", pipeline.nightly_recreate),
            ("verify_test_environment", pipeline.verify_test_environment),
        )
        if on
    ]
    if not pipeline.enabled or not steps or test.existing_cluster is not None:
        return
    source = f"config/{test.environment}.yaml"
    runs = f"config/{config.environment}.yaml's pipeline.{' and pipeline.'.join(steps)}"
    off = (
        f"set {' and '.join(f'pipeline.{s}' for s in steps)} to false in "
        f"config/{config.environment}.yaml"
    )
    eks = test.eks
    if eks.endpoint_access == "private":
        raise ConfigError(
            source,
            "eks.endpoint_access",
            eks.endpoint_access,
            f"public_and_private while {runs} call the cluster's API: {OUTSIDE_VPC}",
            f"set eks.endpoint_access to public_and_private in {source}, or {off}",
        )
    cidrs = list(eks.public_access_cidrs)
    if cidrs and ANY_ADDRESS not in cidrs:
        raise ConfigError(
            source,
            "eks.public_access_cidrs",
            cidrs,
            f"[] or a list with {ANY_ADDRESS} while {runs} call the cluster's API: {OUTSIDE_VPC}",
            f"remove eks.public_access_cidrs from {source}, or {off}",
        )
