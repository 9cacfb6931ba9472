"""The network: the VPC the app creates or an existing one, and the HyperPod subnet in it."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation
from infra.config.fields import aws_id, cidr, retention_days

AZ_ID = re.compile(r"^([a-z]{2,6})([0-9])-az[0-9]+$")
# The compass words of region names as they appear in AZ ids (us-west-2 -> usw2).
_COMPASS = {
    "north": "n",
    "south": "s",
    "east": "e",
    "west": "w",
    "central": "c",
    "northeast": "ne",
    "northwest": "nw",
    "southeast": "se",
    "southwest": "sw",
}
# The partition words of region names as AZ ids spell them: us-gov-west-1 -> usgw1,
# us-iso-east-1 -> usie1, us-isob-east-1 -> usibe1 (AZ ids published for those regions). The
# regions of the other partitions (aws-iso-e, aws-iso-f, aws-eusc) publish none: no prefix.
_PARTITION_WORD = {"gov": "g", "iso": "i", "isob": "ib"}


def az_id_prefix(region: str) -> str | None:
    """``us-west-2`` -> ``usw2``; None when the region uses a word these tables do not know."""
    parts = region.split("-")
    if len(parts) == 4 and parts[1] in _PARTITION_WORD:
        parts = [parts[0] + _PARTITION_WORD[parts[1]], *parts[2:]]
    if len(parts) != 3 or parts[1] not in _COMPASS:
        return None
    return f"{parts[0]}{_COMPASS[parts[1]]}{parts[2]}"


ZONES = Path(__file__).with_name("zones.json")


@cache
def _zones() -> dict[str, Any]:
    regions: dict[str, Any] = json.loads(ZONES.read_text())["regions"]
    return regions


def region_zones(region: str) -> tuple[list[str], list[str]] | None:
    """(AZ names, AZ ids) published for ``region`` (tools/availability_zones.py says from
    where); None for a Region the table does not know. The ids may be empty: not recorded."""
    known = _zones().get(region)
    return None if known is None else (known["names"], known["ids"])


class HyperPodSubnetConfig(Section):
    az_id: str = "usw2-az2"
    """AZ *id* (``usw2-az2`` form, the same physical zone in every account) of the HyperPod subnet.
    Pick one where your G6e capacity is (``hpkv preflight`` checks the offering)."""
    cidr: str = "10.1.0.0/16"
    """Secondary VPC CIDR block that becomes the HyperPod subnet (HyperPod uses one IP per Pod)."""

    @field_validator("az_id")
    @classmethod
    def _az_id(cls, v: str) -> str:
        if not AZ_ID.match(v):
            raise RuleViolation(
                "an AZ id like usw2-az2 (not an AZ name like us-west-2b)",
                "run `aws ec2 describe-availability-zones --query "
                "'AvailabilityZones[].[ZoneName,ZoneId]'` and use the ZoneId",
            )
        return v

    @field_validator("cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        return cidr(v, "network.hyperpod_subnet.cidr", 16, 24)


class ExistingVpcConfig(Section):
    """A VPC the app does not own. The app adds the HyperPod subnet (with an S3 gateway endpoint
    on its route table), flow logs and the cluster security group to it."""

    vpc_id: str
    """Id of the VPC (vpc-...)."""
    vpc_cidr: str
    """Its primary CIDR (the security group allows HTTPS from it)."""
    private_subnet_ids: tuple[str, str]
    """Two private subnets in different AZs (listed in network.availability_zones, same order)
    with a NAT route: the EKS control-plane subnets."""
    nat_gateway_id: str
    """NAT gateway the HyperPod subnet routes its internet egress through."""

    @field_validator("vpc_id")
    @classmethod
    def _vpc_id(cls, v: str) -> str:
        return aws_id(v, "vpc", "network.existing_vpc.vpc_id")

    @field_validator("private_subnet_ids")
    @classmethod
    def _subnets(cls, v: tuple[str, str]) -> tuple[str, str]:
        for subnet in v:
            aws_id(subnet, "subnet", "network.existing_vpc.private_subnet_ids")
        return v

    @field_validator("nat_gateway_id")
    @classmethod
    def _nat(cls, v: str) -> str:
        return aws_id(v, "nat", "network.existing_vpc.nat_gateway_id")

    @field_validator("vpc_cidr")
    @classmethod
    def _cidr(cls, v: str) -> str:
        return cidr(v, "network.existing_vpc.vpc_cidr", 16, 28)


class NetworkConfig(Section):
    existing_vpc: ExistingVpcConfig | None = None
    """Use this VPC instead of creating one (null: the app creates a VPC)."""
    vpc_cidr: str = "10.192.0.0/16"
    """Primary CIDR of the VPC the app creates (public and EKS control-plane subnets)."""
    availability_zones: tuple[str, str] = ("us-west-2a", "us-west-2b")
    """Two AZ names for the public and EKS control-plane subnets (EKS needs two AZs)."""
    nat_gateways: int = Field(default=1, ge=1, le=2)
    """NAT gateways: 1 is cheaper, 2 survives the loss of one AZ."""
    hyperpod_subnet: HyperPodSubnetConfig = HyperPodSubnetConfig()
    flow_logs_retention_days: int = 30
    """Retention of the VPC flow log group, in days."""

    @field_validator("vpc_cidr")
    @classmethod
    def _vpc_cidr(cls, v: str) -> str:
        return cidr(v, "network.vpc_cidr", 16, 24)

    @field_validator("flow_logs_retention_days")
    @classmethod
    def _retention(cls, v: int) -> int:
        return retention_days(v, "network.flow_logs_retention_days")

    @property
    def primary_cidr(self) -> str:
        return self.existing_vpc.vpc_cidr if self.existing_vpc else self.vpc_cidr
