"""The logical-ID comparison between revisions: what it reports, and that its variants are
configs the current model accepts (a variant that no longer parses would stop the tool)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from infra.config import parse_config
from infra.config.loader import CONFIG_DIR
from tools.logical_ids import (
    VARIANTS,
    _merge,
    differences,
    logical_ids,
    template_diff,
    unexpected,
)


@pytest.mark.parametrize(("name", "base", "overlay"), [v[:3] for v in VARIANTS])
def test_every_variant_is_a_valid_config(name: str, base: str, overlay: dict[str, Any]) -> None:
    raw = _merge(yaml.safe_load((CONFIG_DIR / f"{base}.yaml").read_text()), overlay)
    parse_config(raw, f"config/{base}.yaml ({name} variant)", base)


def test_a_renamed_resource_is_one_removal_and_one_addition() -> None:
    before = {"dev/a.template.json": {"Bucket1": "AWS::S3::Bucket", "Role": "AWS::IAM::Role"}}
    after = {"dev/a.template.json": {"Bucket2": "AWS::S3::Bucket", "Role": "AWS::IAM::Role"}}
    assert differences(before, after) == [
        "dev/a.template.json/Bucket1: removed (AWS::S3::Bucket)",
        "dev/a.template.json/Bucket2: added (AWS::S3::Bucket)",
    ]


def test_a_type_change_and_a_missing_template_are_reported() -> None:
    before = {"dev/a.template.json": {"X": "AWS::SNS::Topic"}, "dev/b.template.json": {}}
    after = {"dev/a.template.json": {"X": "AWS::SQS::Queue"}}
    assert differences(before, after) == [
        "dev/a.template.json/X: type AWS::SNS::Topic -> AWS::SQS::Queue",
        "dev/b.template.json: template removed",
    ]


def test_an_allowed_difference_counts_in_every_variant_only_when_named() -> None:
    lines = [
        "dev/s.template.json/Provider: removed (AWS::Lambda::Function)",
        "test/s.template.json/Provider: removed (AWS::Lambda::Function)",
        "dev/s.template.json/Bucket: removed (AWS::S3::Bucket)",
    ]
    allowed = {"s.template.json/Provider": "moved beside its handler; Delete-then-Create is safe"}
    assert unexpected(lines, allowed) == ["dev/s.template.json/Bucket: removed (AWS::S3::Bucket)"]


def test_outputs_count_by_their_export_name() -> None:
    template = {
        "Resources": {"Vpc": {"Type": "AWS::EC2::VPC"}},
        "Outputs": {"VpcId": {"Value": "x", "Export": {"Name": "dev-network:VpcId"}}},
    }
    assert logical_ids(template) == {
        "Vpc": "AWS::EC2::VPC",
        "Outputs.VpcId": "Output exported as dev-network:VpcId",
    }


def test_a_moved_handler_changes_only_an_asset_hash_which_the_diff_ignores() -> None:
    def function(key: str, memory: int) -> dict[str, Any]:
        code = {"S3Bucket": "b", "S3Key": f"{key}.zip"}
        return {
            "R": {
                "Type": "AWS::Lambda::Function",
                "Properties": {"Code": code, "MemorySize": memory},
            }
        }

    old, new = "a" * 64, "b" * 64
    assert (
        template_diff(
            {"t": {"Resources": function(old, 256)}}, {"t": {"Resources": function(new, 256)}}
        )
        == ""
    )
    diff = template_diff(
        {"t": {"Resources": function(old, 256)}}, {"t": {"Resources": function(new, 512)}}
    )
    assert '-    "MemorySize": 256' in diff and '+    "MemorySize": 512' in diff
