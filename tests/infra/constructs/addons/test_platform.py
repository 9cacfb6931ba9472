"""The add-on table: one row per config section, requirements that name rows."""

from __future__ import annotations

from infra.config.addons import ADDON_KEYS, INFERENCE_REQUIRES
from infra.constructs.addons.platform import ADDONS


def test_every_addon_section_has_one_row_in_config_order() -> None:
    """A section without a row would be accepted by config and never installed."""
    assert [row.key for row in ADDONS] == list(ADDON_KEYS)
    assert len({row.id for row in ADDONS}) == len(ADDONS)


def test_each_requirement_names_an_addon_of_the_table() -> None:
    keys = {row.key for row in ADDONS}
    assert all(set(row.requires) <= keys for row in ADDONS)
    assert {row.key: row.requires for row in ADDONS if row.requires} == {
        "inference_operator": INFERENCE_REQUIRES
    }
