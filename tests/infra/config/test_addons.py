"""Add-on config rules: the one-line errors a user sees at synth.

Double: none; ``parse_config`` is the real loader path that turns a ``RuleViolation`` into the
one-line ``ConfigError``.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import ConfigError, parse_config
from tests.support.config import EXISTING_GROUPS, existing_cluster


def parse(addons: dict[str, Any], **extra: Any) -> Any:
    return parse_config(
        {"account": "111122223333", "addons": addons, **extra}, "config/dev.yaml", "dev"
    )


def test_missing_dependency_is_one_line_naming_it() -> None:
    with pytest.raises(ConfigError) as err:
        parse({"s3_csi": {"enabled": False}})
    assert str(err.value) == (
        "config/dev.yaml: addons.s3_csi.enabled = False: allowed: true while "
        "addons.inference_operator.enabled is true (the operator's init container refuses to "
        "start without CSIDriver s3.csi.aws.com); fix: set addons.s3_csi.enabled to true (mode: "
        "skip if it is already installed), or addons.inference_operator.enabled to false"
    )
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("key", ["cert_manager", "fsx_csi", "metrics_server"])
def test_every_declared_dependency_is_checked(key: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse({key: {"enabled": False}})
    assert err.value.field == f"addons.{key}.enabled"


def test_dependencies_may_be_off_without_the_inference_addon() -> None:
    cfg = parse({"inference_operator": {"enabled": False}, "s3_csi": {"enabled": False}})
    assert not cfg.addons.s3_csi.enabled


def test_ebs_csi_is_not_an_inference_dependency() -> None:
    assert not parse({"ebs_csi": {"enabled": False}}).addons.ebs_csi.enabled


def test_adopt_needs_an_existing_cluster() -> None:
    with pytest.raises(ConfigError) as err:
        parse({"cert_manager": {"mode": "adopt"}})
    assert err.value.field == "addons.cert_manager.mode"
    assert err.value.value == "adopt"


def test_adopt_and_skip_on_an_existing_cluster() -> None:
    cfg = parse(
        {"cert_manager": {"mode": "adopt"}, "metrics_server": {"mode": "skip"}},
        existing_cluster=existing_cluster(),
        hyperpod=EXISTING_GROUPS,
    )
    assert cfg.addons.cert_manager.managed
    assert not cfg.addons.metrics_server.managed


@pytest.mark.parametrize("version", ["latest", "v1.18.2", "1.18.2-eksbuild.2"])
def test_versions_must_be_pinned_eksbuilds(version: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse({"cert_manager": {"version": version}})
    assert err.value.field == "addons.cert_manager.version"


@pytest.mark.parametrize("name", ["arn:aws:s3:::weights", "s3://weights", "Weights"])
def test_model_buckets_are_bare_names(name: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse({"s3_csi": {"model_bucket_names": [name]}})
    assert err.value.field == "addons.s3_csi.model_bucket_names"
