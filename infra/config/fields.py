"""Field rules that more than one config section uses: AWS ids, region codes, EKS add-on
versions, S3 bucket names, pinned images (as a registry parses them), DNS labels, CIDRs and log
retention.

Each check raises ``RuleViolation`` with what is allowed and the fix; the section's validator
that calls it decides the field (pydantic reports the field the validator runs on).
"""

from __future__ import annotations

import ipaddress
import re

from infra.config.errors import RuleViolation
from infra.config.image_reference import GRAMMAR, BadReference, parse_image, parse_repository

REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
# A pinned EKS add-on version, vX.Y.Z-eksbuild.N; the groups are X, Y and Z.
EKSBUILD_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-eksbuild\.\d+$")
S3_BUCKET_NAME = re.compile(r"^(?!xn--)(?!.*-s3alias$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# Values CloudWatch Logs accepts for retention.
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)


def is_aws_id(value: str, kind: str) -> bool:
    """``<kind>-`` and 8 to 17 hex digits: ``vpc-0abc1234``, ``subnet-…``, ``sg-…``, ``nat-…``."""
    return re.match(rf"^{kind}-[0-9a-f]{{8,17}}$", value) is not None


def aws_id(value: str, kind: str, field: str) -> str:
    if not is_aws_id(value, kind):
        raise RuleViolation(f"an id like {kind}-0abc1234def567890", f"copy the id into {field}")
    return value


def region(value: str, fix: str) -> str:
    if not REGION.match(value):
        raise RuleViolation("a region code like us-west-2", fix)
    return value


def s3_bucket(value: str, fix: str) -> str:
    """A bare bucket name, not an ARN or an s3:// URL."""
    if not S3_BUCKET_NAME.match(value):
        raise RuleViolation(
            "an S3 bucket name (3-63 lower-case letters, digits, '.' and '-'), not an ARN "
            "or s3:// URL",
            fix,
        )
    return value


def cidr(value: str, field: str, lo: int, hi: int) -> str:
    if "/" not in value:
        # ipaddress reads a bare address as a /32; CloudFormation and EC2 want the prefix.
        raise RuleViolation(
            f"an IPv4 network in CIDR form with its prefix length, /{lo} to /{hi}",
            f"write {value}/32 for one address (or the network's own prefix) in {field}",
        )
    try:
        net = ipaddress.IPv4Network(value)
    except ValueError:
        raise RuleViolation(
            f"an IPv4 network in CIDR form, /{lo} to /{hi}", f"set {field} to e.g. 10.0.0.0/16"
        ) from None
    if not lo <= net.prefixlen <= hi:
        raise RuleViolation(f"a prefix length from /{lo} to /{hi}", f"resize {field}")
    return value


def retention_days(v: int, field: str) -> int:
    if v not in LOG_RETENTION_DAYS:
        raise RuleViolation(
            f"one of CloudWatch's retention values {', '.join(map(str, LOG_RETENTION_DAYS))}",
            f"set {field} to the nearest of them",
        )
    return v


def image_is_pinned(image: str) -> bool:
    """True for ``repo/name:tag`` with a tag other than latest, or ``repo/name@<digest>``;
    False for anything a registry would not parse (a truncated digest, a second tag)."""
    try:
        ref = parse_image(image)
    except BadReference:
        return False
    return ref.digest is not None or ref.tag not in (None, "latest")


def pinned_image(v: str) -> str:
    try:
        parse_image(v)
    except BadReference as bad:
        raise RuleViolation(
            f"an image reference a registry takes ({GRAMMAR}): {bad.why}",
            f"write {bad.fixed}" if bad.fixed else "pin a released tag as its registry lists it",
        ) from None
    if not image_is_pinned(v):
        raise RuleViolation(
            "an image with an explicit tag other than latest (repo/name:v1.2.3) or a digest",
            "pin a released tag",
        )
    return v


def image_repository(v: str) -> str:
    """A repository without tag or digest (the tag is set elsewhere)."""
    try:
        parse_repository(v)
    except BadReference as bad:
        raise RuleViolation(
            f"an image repository a registry takes ([registry[:port]/]path in lower case, no "
            f"tag): {bad.why}",
            f"write {bad.fixed}"
            if bad.fixed
            else "correct the repository as its registry lists it",
        ) from None
    return v


def dns_label(v: str) -> str:
    if not DNS_LABEL.match(v):
        raise RuleViolation("a DNS-1123 label: 1-63 lower-case letters, digits and '-'", "rename")
    return v
