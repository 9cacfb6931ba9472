"""Rules of the network across sections: the AZs and the HyperPod subnet's AZ id belong to the
region, and the HyperPod subnet's CIDR is one AWS lets the VPC add beside its primary CIDR.

The CIDR rule is the Amazon VPC User Guide's table "IPv4 CIDR block association restrictions"
(VPC CIDR blocks): a VPC whose primary CIDR is in one RFC 1918 range cannot add a block of
another, nor of 198.19.0.0/16 (used by AWS services), nor link-local 169.254.0.0/16; a VPC in
172.16.0.0/12 cannot add 172.31.0.0/16; one with a block in 10.0.0.0/15 cannot add 10.0.0.0/16;
a publicly routable (or 100.64.0.0/10) primary cannot add RFC 1918 blocks. CloudFormation
accepts the template and the association fails at deploy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from ipaddress import IPv4Network

from infra.config.errors import RuleViolation
from infra.config.model import AppConfig
from infra.config.network import az_id_prefix, region_zones

NET = IPv4Network
RFC1918 = (NET("10.0.0.0/8"), NET("172.16.0.0/12"), NET("192.168.0.0/16"))
SERVICES = NET("198.19.0.0/16")
LINK_LOCAL = NET("169.254.0.0/16")
SHARED = NET("100.64.0.0/10")
GUIDE = "the VPC user guide's IPv4 CIDR block association restrictions"


@dataclass(frozen=True)
class _Family:
    """A row of the guide's table: what a primary CIDR in ``primary`` forbids beside it."""

    primary: IPv4Network | None  # None: publicly routable or 100.64.0.0/10
    restricted: tuple[IPv4Network, ...]
    permitted: str
    example_in: IPv4Network


def _family(primary: IPv4Network) -> _Family:
    ten, one72, one92 = RFC1918
    if primary.subnet_of(ten):
        # "If any of the CIDR blocks associated with the VPC are from 10.0.0.0/15 ..."
        low = (NET("10.0.0.0/16"),) if primary.overlaps(NET("10.0.0.0/15")) else ()
        return _Family(
            ten,
            (one72, one92, SERVICES, *low),
            "another block of 10.0.0.0/8, a publicly routable one or one of 100.64.0.0/10",
            ten,
        )
    if primary.subnet_of(one72):
        return _Family(
            one72,
            (ten, one92, NET("172.31.0.0/16"), SERVICES),
            "another block of "
            "172.16.0.0/12 (not 172.31.0.0/16), a publicly routable one or one of "
            "100.64.0.0/10",
            one72,
        )
    if primary.subnet_of(one92):
        return _Family(
            one92,
            (ten, one72, SERVICES),
            "another block of 192.168.0.0/16, a publicly routable one or one of 100.64.0.0/10",
            one92,
        )
    if primary.subnet_of(SERVICES):
        return _Family(
            SERVICES, RFC1918, "a publicly routable block or one of 100.64.0.0/10", SHARED
        )
    return _Family(
        None, (*RFC1918, SERVICES), "a publicly routable block or one of 100.64.0.0/10", SHARED
    )


def association_refusal(primary: IPv4Network, secondary: IPv4Network) -> str | None:
    """Why AWS refuses ``secondary`` as a VPC's second CIDR beside ``primary``; None if it
    does not."""
    if secondary.overlaps(LINK_LOCAL):
        return f"{LINK_LOCAL} is link-local, never a VPC's"
    family = _family(primary)
    for block in family.restricted:
        if secondary.overlaps(block):
            where = "a VPC" if family.primary is None else f"a VPC in {family.primary}"
            return f"{block} cannot be added to {where}"
    return None


def _example(primary: IPv4Network, prefix: int) -> IPv4Network | None:
    """The first block of that size the VPC would accept: in the primary's own family, else in
    100.64.0.0/10, which every family permits (None: no block that large fits either)."""
    for space in (_family(primary).example_in, SHARED):
        if prefix < space.prefixlen:
            continue
        for candidate in space.subnets(new_prefix=prefix):
            if not candidate.overlaps(primary) and association_refusal(primary, candidate) is None:
                return candidate
    return None


def check_network(app: AppConfig) -> None:
    """The AZs and the HyperPod subnet in the region, its CIDR apart from the VPC's."""
    _check_azs(app)
    _check_hyperpod_cidr(app)


def _check_azs(app: AppConfig) -> None:
    prefix = az_id_prefix(app.region)
    az_id = app.network.hyperpod_subnet.az_id
    if prefix is not None and not re.fullmatch(rf"{prefix}-az[0-9]+", az_id):
        raise RuleViolation(
            f"an AZ id of region {app.region} ({prefix}-az1, {prefix}-az2, ...)",
            "pick an AZ id in the configured region",
            field="network.hyperpod_subnet.az_id",
            value=az_id,
        )
    azs = list(app.network.availability_zones)
    for az in azs:
        # A zone of the region: the region's name and one letter (us-west-2a); Local Zones
        # (us-west-2-lax-1a) cannot hold EKS control-plane subnets.
        if not re.fullmatch(rf"{re.escape(app.region)}[a-z]", az):
            raise RuleViolation(
                f"AZ names of region {app.region}: the region and one letter ({app.region}a, "
                f"{app.region}b, ...)",
                "list two AZ names of the configured region (aws ec2 describe-availability-zones "
                "--query 'AvailabilityZones[].ZoneName')",
                field="network.availability_zones",
                value=azs,
            )
    if azs[0] == azs[1]:
        raise RuleViolation(
            "two different AZ names (EKS needs subnets in two AZs)",
            "list two different AZs",
            field="network.availability_zones",
            value=azs,
        )
    _check_published_zones(app)


def _check_published_zones(app: AppConfig) -> None:
    """The AZ names and id are ones the Region has (infra/config/zones.json). A name's letter
    maps to a zone per account in the oldest Regions: preflight confirms both in the account."""
    published = region_zones(app.region)
    if published is None:
        return
    names, ids = published
    az_id = app.network.hyperpod_subnet.az_id
    if ids and az_id not in ids:
        raise RuleViolation(
            f"an AZ id of {app.region}: {', '.join(ids)}",
            "pick one where your GPU capacity is (hpkv preflight checks the offering)",
            field="network.hyperpod_subnet.az_id",
            value=az_id,
        )
    azs = list(app.network.availability_zones)
    unknown = [az for az in azs if az not in names]
    if unknown:
        raise RuleViolation(
            f"AZ names of {app.region}: {', '.join(names)}",
            f"replace {', '.join(unknown)} (aws ec2 describe-availability-zones --region "
            f"{app.region} --query 'AvailabilityZones[].ZoneName')",
            field="network.availability_zones",
            value=azs,
        )


def _check_hyperpod_cidr(app: AppConfig) -> None:
    field = "network.hyperpod_subnet.cidr"
    value = app.network.hyperpod_subnet.cidr
    primary, hp = NET(app.network.primary_cidr), NET(value)
    if hp.overlaps(primary):
        raise RuleViolation(
            f"a CIDR that does not overlap the VPC's primary CIDR ({primary})",
            "use a separate range, e.g. 10.1.0.0/16",
            field=field,
            value=value,
        )
    why = association_refusal(primary, hp)
    if why is not None:
        example = _example(primary, hp.prefixlen)
        raise RuleViolation(
            f"a block AWS lets the VPC add beside its primary CIDR {primary}: "
            f"{_family(primary).permitted} ({why}: {GUIDE})",
            f"use e.g. {example}" if example else f"use a smaller block of {SHARED}",
            field=field,
            value=value,
        )
