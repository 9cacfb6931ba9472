"""Field rules that more than one config section uses: AWS ids, region codes, EKS add-on
versions, S3 bucket names, pinned images, DNS labels, CIDRs and log retention.

Each check raises ``RuleViolation`` with what is allowed and the fix; the section's validator
that calls it decides the field (pydantic reports the field the validator runs on).
"""

from __future__ import annotations

import ipaddress
import re

from infra.config.errors import RuleViolation

REGION = re.compile(r"^[a-z]{2}(-[a-z]+)+-[0-9]$")
# A pinned EKS add-on version, vX.Y.Z-eksbuild.N; the groups are X, Y and Z.
EKSBUILD_VERSION = re.compile(r"^v(\d+)\.(\d+)\.(\d+)-eksbuild\.\d+$")
S3_BUCKET_NAME = re.compile(r"^(?!xn--)(?!.*-s3alias$)[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
# [registry[:port]/]path/name, then an optional tag (OCI grammar) and an optional digest.
IMAGE_REFERENCE = re.compile(
    r"(?:[^\s/@]+/)*[^\s/:@]+"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?"
)
# Values CloudWatch Logs accepts for retention.
LOG_RETENTION_DAYS = (1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827,
                      2192, 2557, 2922, 3288, 3653)  # fmt: skip


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
    """True for ``repo/name:tag`` with a tag other than latest, or ``repo/name@sha256:<64 hex>``;
    False for anything that is not a well-formed reference (a truncated digest, a second tag)."""
    ref = IMAGE_REFERENCE.fullmatch(image)
    return ref is not None and (ref["digest"] is not None or ref["tag"] not in (None, "latest"))


def pinned_image(v: str) -> str:
    if not image_is_pinned(v):
        raise RuleViolation(
            "an image with an explicit tag other than latest (repo/name:v1.2.3) or a digest",
            "pin a released tag",
        )
    return v


def dns_label(v: str) -> str:
    if not DNS_LABEL.match(v):
        raise RuleViolation("a DNS-1123 label: 1-63 lower-case letters, digits and '-'", "rename")
    return v
