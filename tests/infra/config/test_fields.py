"""The whole line a user sees for each shared field rule (infra/config/fields.py: add-on
versions, images, AWS ids, CIDRs, log retention), word for word (pure parsing, no double).

A rule's message is its user interface: ``<file>: <field> = <value>: allowed: ...; fix: ...``.
Each test here pins that line for one rule, so a reworded or dropped part is a failing test.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from infra.config import ConfigError, parse_config
from infra.config.fields import image_is_pinned
from infra.config.fsx import FsxLustreConfig
from tests.support.config import SOURCE, refusal, with_overrides

ADDON_LATEST = (
    "allowed: a pinned EKS add-on version like v1.18.2-eksbuild.2 (never latest); fix: run "
    "`aws eks describe-addon-versions --addon-name <name> --kubernetes-version <minor>` and pin one"
)


# --- add-on versions -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("addon", "version"),
    [
        ("cert_manager", "latest"),
        ("s3_csi", "v2.7.0"),
        ("metrics_server", "0.8.0-eksbuild.6"),
        ("inference_operator", "latest"),
    ],
)
def test_an_unpinned_addon_version_is_refused_with_the_command_that_lists_versions(
    addon: str, version: str
) -> None:
    field = f"addons.{addon}.version"
    assert refusal({field: version}) == f"{SOURCE}: {field} = {version!r}: {ADDON_LATEST}"


# --- images --------------------------------------------------------------------------------------

DIGEST = "@sha256:" + "0123456789abcdef" * 4


@pytest.mark.parametrize(
    ("image", "pinned"),
    [
        ("busybox:1.36", True),
        ("busybox", False),
        ("busybox:latest", False),
        ("busybox:", False),
        ("registry.k8s.io/sig-storage/csi-provisioner:v3.6.0", True),
        ("registry.k8s.io/sig-storage/csi-provisioner:latest", False),
        # A registry with a port: its colon is not a tag.
        ("registry.example.com:5000/team/app", False),
        ("registry.example.com:5000/team/app:v1.2.3", True),
        ("registry.example.com:5000/team/app:latest", False),
        ("localhost:5000/app", False),
        # The tag belongs to the last path segment only.
        ("ghcr.io/team:v1/app", False),
        # A digest pins the image with or without a tag.
        (f"ghcr.io/team/app{DIGEST}", True),
        (f"registry.example.com:5000/app{DIGEST}", True),
        (f"ghcr.io/team/app:latest{DIGEST}", True),
        # Not a reference at all: pinned to nothing a node could pull.
        (f"ghcr.io/team/app{DIGEST[:-1]}", False),
        (f"ghcr.io/team/app{DIGEST.upper()}", False),
        ("ghcr.io/team/app@sha256:", False),
        ("ghcr.io/team/app:v1:v2", False),
        ("ghcr.io/team/app:latest:v1", False),
        ("ghcr.io/team/app:v 1", False),
        ("ghcr.io/team/app:v1\n", False),
        ("ghcr.io/team/app:-v1", False),
        # The reference grammar a registry parses with: lower-case paths, joined by . _ __ or -.
        ("ghcr.io/Team/app:v1", False),
        ("LMCache/vllm-openai:v0.4.7", False),
        ("Registry.Example.com/team/app:v1", True),
        ("ghcr.io/team//app:v1", False),
        ("ghcr.io/team/app-:v1", False),
        ("ghcr.io/team/a__b/c.d/e--f:v1", True),
        ("ghcr.io/team/a___b:v1", False),
        ("[::1]:5000/team/app:v1", True),
        ("ghcr.io/team/app:v1é", False),
        (f"ghcr.io/team/app@sha512:{'a' * 128}", True),
        (f"ghcr.io/team/app@md5:{'a' * 32}", False),
        ("0123456789abcdef" * 4 + ":v1", False),
        ("r.io/" + "a" * 251 + ":v1", False),
    ],
)
def test_an_image_is_pinned_by_a_tag_on_its_last_segment_or_a_digest(
    image: str, pinned: bool
) -> None:
    assert image_is_pinned(image) is pinned


def test_an_empty_tag_is_refused_as_a_registry_would() -> None:
    assert refusal({"kvcache.endpoints.0.image": "ghcr.io/team/app:"}) == (
        f"{SOURCE}: kvcache.endpoints.0.image = 'ghcr.io/team/app:': allowed: an image reference "
        "a registry takes ([registry[:port]/]path[:tag][@digest] with the path in lower case): "
        "nothing after the ':' that starts the tag; fix: pin a released tag as its registry "
        "lists it"
    )


@pytest.mark.parametrize("image", ["registry.example.com:5000/team/app", "ghcr.io/team/app"])
def test_an_unpinned_endpoint_image_is_refused_with_the_fix(image: str) -> None:
    field = "kvcache.endpoints.0.image"
    raw = with_overrides({})
    raw["kvcache"]["endpoints"][0]["image"] = image
    with pytest.raises(ConfigError) as err:
        parse_config(raw, SOURCE, "dev")
    assert str(err.value) == (
        f"{SOURCE}: {field} = {image!r}: allowed: an image with an explicit tag other than "
        "latest (repo/name:v1.2.3) or a digest; fix: pin a released tag"
    )


# --- AWS ids of the FSx placement ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("key", "value", "kind"),
    [
        ("hyperpod_subnet_id", "subnet-1", "subnet"),
        ("vpc_id", "sg-0aaaa1111bbbb2222", "vpc"),
        ("client_security_group_id", "sg-0EEEE5555FFFF6666", "sg"),
    ],
)
def test_a_malformed_fsx_id_is_refused_with_its_shape(key: str, value: str, kind: str) -> None:
    field = f"kvcache.fsx.{key}"
    assert refusal({field: value}) == (
        f"{SOURCE}: {field} = {value!r}: allowed: an id like {kind}-0abc1234def567890; "
        f"fix: copy the id into {field}"
    )


def test_a_section_built_in_python_shows_the_same_allowed_and_fix() -> None:
    """pydantic's own error (a section built in code, not loaded) carries the rule's text too."""
    with pytest.raises(ValidationError) as err:
        FsxLustreConfig(vpc_id="vpc-1")
    (only,) = err.value.errors(include_url=False)
    assert only["msg"] == (
        "Value error, allowed: an id like vpc-0abc1234def567890; fix: copy the id into "
        "kvcache.fsx.vpc_id"
    )


# --- network sizes and log retention -------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "lo", "hi"),
    [
        ("network.vpc_cidr", 16, 24),
        ("network.hyperpod_subnet.cidr", 16, 24),
    ],
)
@pytest.mark.parametrize("value", ["10.192.0.1/16", "ten.0.0.0/16", "10.192.0.0/33", "fd00::/16"])
def test_a_cidr_that_is_not_an_ipv4_network_is_refused_with_an_example(
    field: str, lo: int, hi: int, value: str
) -> None:
    """Host bits set (10.192.0.1/16) are refused too: the address must be the network's own."""
    assert refusal({field: value}) == (
        f"{SOURCE}: {field} = {value!r}: allowed: an IPv4 network in CIDR form, /{lo} to /{hi}; "
        f"fix: set {field} to e.g. 10.0.0.0/16"
    )


def test_a_cidr_outside_the_prefix_range_is_refused_with_the_range() -> None:
    field = "network.hyperpod_subnet.cidr"
    assert refusal({field: "10.1.0.0/25"}) == (
        f"{SOURCE}: {field} = '10.1.0.0/25': allowed: a prefix length from /16 to /24; "
        f"fix: resize {field}"
    )


def test_a_retention_cloudwatch_does_not_offer_is_refused_with_the_values_it_does() -> None:
    field = "network.flow_logs_retention_days"
    assert refusal({field: 31}) == (
        f"{SOURCE}: {field} = 31: allowed: one of CloudWatch's retention values 1, 3, 5, 7, 14, "
        "30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, "
        f"3653; fix: set {field} to the nearest of them"
    )


@pytest.mark.parametrize(
    ("image", "fixed"),
    [
        ("ghcr.io/Team/App:v1", "ghcr.io/team/app:v1"),
        ("LMCache/vllm-openai:v0.4.7", "lmcache/vllm-openai:v0.4.7"),
        (f"Lmcache/vllm-openai{DIGEST}", f"lmcache/vllm-openai{DIGEST}"),
    ],
)
def test_an_upper_case_repository_is_refused_with_the_reference_in_lower_case(
    image: str, fixed: str
) -> None:
    """Registries and the kubelet refuse an upper-case path (repository name must be
    lowercase); an upper-case first component reads as a registry host instead."""
    message = refusal({"kvcache.endpoints.0.image": image})
    assert message is not None and message.endswith(f"; fix: write {fixed}"), message
    assert refusal({"kvcache.endpoints.0.image": fixed}) is None


def test_a_curvine_repository_is_checked_as_a_registry_reads_it() -> None:
    field = "kvcache.curvine.image_repository"
    assert refusal({field: "ghcr.io/CurvineIO/curvine"}) == (
        f"{SOURCE}: {field} = 'ghcr.io/CurvineIO/curvine': allowed: an image repository a "
        "registry takes ([registry[:port]/]path in lower case, no tag): the repository path "
        "'CurvineIO/curvine' has upper-case letters (registries and the kubelet refuse them: "
        "repository name must be lowercase); fix: write ghcr.io/curvineio/curvine"
    )
    assert refusal({field: "123456789012.dkr.ecr.us-west-2.amazonaws.com/curvine"}) is None
