"""tools/availability_zones.py: infra/config/zones.json is what the pinned cfn-lint and moto
record (no double: both are installed)."""

from __future__ import annotations

import json

from tools.availability_zones import ZONES, zones


def test_the_zones_file_is_what_the_pinned_sources_record() -> None:
    assert json.loads(ZONES.read_text()) == zones(), "run python -m tools.availability_zones"


def test_a_region_mapped_per_account_lists_every_letter_either_source_saw() -> None:
    """us-west-1: accounts see two of a, b and c; a config naming any of them is not refused
    at synth (preflight asks the account)."""
    assert zones()["regions"]["us-west-1"]["names"] == ["us-west-1a", "us-west-1b", "us-west-1c"]
