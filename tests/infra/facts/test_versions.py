"""The version tables: every supported Kubernetes minor has its core add-on versions."""

from __future__ import annotations

from infra.facts import versions


def test_every_supported_minor_has_a_table() -> None:
    assert set(versions.SUPPORTED_KUBERNETES) <= set(versions.CORE_ADDON_VERSIONS)
    for minor, table in versions.CORE_ADDON_VERSIONS.items():
        assert versions.addon_minor(table.kube_proxy) == minor
