"""Preflight rows about the account and Region rather than the cluster: the Availability Zones
the config names (the account's own mapping of names to zones), the SageMaker endpoint names
the environment's endpoints will take (unique per account and Region), and the endpoints it
deployed under the names before they carried the environment."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from infra.config import AppConfig
from infra.config.model import sagemaker_endpoint_name, sagemaker_model_name
from infra.environment.layout import stack_name
from scripts.lib.checks import Check
from scripts.lib.clients import Clients

ZONES = "availability zones"


def check_zones(clients: Clients, cfg: AppConfig) -> Check:
    """The HyperPod subnet's AZ id, and (for a VPC the app creates) the AZ names, among the
    zones this account sees in the Region."""
    try:
        zones = clients.aws("ec2").describe_availability_zones()["AvailabilityZones"]
    except (ClientError, BotoCoreError) as exc:
        return Check(
            ZONES, "warn", f"cannot list zones: {exc}", "grant ec2:DescribeAvailabilityZones"
        )
    ids = sorted(z["ZoneId"] for z in zones)
    names = sorted(z["ZoneName"] for z in zones)
    az_id = cfg.network.hyperpod_subnet.az_id
    if az_id not in ids:
        return Check(
            ZONES,
            "fail",
            f"{az_id} is not a zone of this account in {cfg.region}",
            f"set network.hyperpod_subnet.az_id to one of {', '.join(ids)}",
        )
    missing = [n for n in cfg.network.availability_zones if n not in names]
    if missing and cfg.network.existing_vpc is None:
        return Check(
            ZONES,
            "fail",
            f"{', '.join(missing)}: not a zone of this account in {cfg.region}",
            f"list two of {', '.join(names)} in network.availability_zones",
        )
    return Check(ZONES, "pass", f"{az_id} and {', '.join(cfg.network.availability_zones)}")


def check_endpoint_names(clients: Clients, cfg: AppConfig) -> list[Check]:
    """Each endpoint's SageMaker endpoint name is free in the account and Region, or already
    this environment's (its endpoints stack is deployed)."""
    sagemaker = clients.aws("sagemaker")
    checks = []
    for i, e in enumerate(cfg.kvcache.endpoints):
        name = sagemaker_endpoint_name(cfg, e)
        stage = f"SageMaker endpoint {name}"
        try:
            sagemaker.describe_endpoint(EndpointName=name)
        except ClientError as exc:
            if "Could not find endpoint" in str(exc):
                checks.append(Check(stage, "pass", "the name is free"))
                continue
            checks.append(Check(stage, "warn", str(exc), "grant sagemaker:DescribeEndpoint"))
            continue
        except BotoCoreError as exc:
            checks.append(Check(stage, "warn", str(exc), "check the network and credentials"))
            continue
        if _deployed(clients, stack_name(cfg, "endpoints")):
            checks.append(Check(stage, "pass", "exists: this environment's endpoints are deployed"))
            continue
        detail = (
            f"exists in {cfg.region} and this environment has not deployed its endpoints: "
            "another environment or a manual deploy holds the name"
        )
        fix = (
            f"rename kvcache.endpoints.{i}.name, or delete a left-over endpoint "
            f"(aws sagemaker delete-endpoint --endpoint-name {name})"
        )
        checks.append(Check(stage, "fail", detail, fix))
    return checks


def _endpoint_exists(sagemaker: Any, name: str) -> bool | None:
    """Whether SageMaker has an endpoint ``name``; None when it would not say."""
    try:
        sagemaker.describe_endpoint(EndpointName=name)
    except ClientError as exc:
        return False if "Could not find endpoint" in str(exc) else None
    except BotoCoreError:
        return None
    return True


def check_renamed_endpoints(clients: Clients, cfg: AppConfig) -> list[Check]:
    """One row per endpoint this environment deployed before SageMaker names carried the
    environment (``<name>``, now ``<environment>-<name>``): the next deploy renames it, or a
    deploy did and the old endpoint is left. Nothing for the endpoints without one."""
    if not cfg.kvcache.endpoints or not _deployed(clients, stack_name(cfg, "endpoints")):
        return []  # an endpoint of the old name is another deploy's, not this environment's
    sagemaker = clients.aws("sagemaker")
    checks = []
    for e in cfg.kvcache.endpoints:
        old, new = e.name, sagemaker_endpoint_name(cfg, e)
        if not _endpoint_exists(sagemaker, old):
            continue
        stage = f"SageMaker endpoint {old} (before {new})"
        calls = f"point callers of {old} (InvokeEndpoint) at {new}"
        if _endpoint_exists(sagemaker, new):
            detail = f"{new} serves the endpoint; {old}, the name before, is left over"
            fix = (
                f"{calls}, then delete it: aws sagemaker delete-endpoint --endpoint-name "
                f"{old} (docs/cli.md#upgrading-sagemaker-names)"
            )
        else:
            detail = (
                f"the deploy renames it to {new} (its model to "
                f"{sagemaker_model_name(cfg, e)}): callers of {old} lose it"
            )
            fix = f"{calls} once deployed (docs/cli.md#upgrading-sagemaker-names)"
        checks.append(Check(stage, "warn", detail, fix))
    return checks


def _deployed(clients: Clients, stack: str) -> bool:
    try:
        clients.aws("cloudformation").describe_stacks(StackName=stack)
    except ClientError:
        return False
    return True
