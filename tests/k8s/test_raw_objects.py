"""``k8s.common.raw``: an object written field by field comes out exactly as written."""

from __future__ import annotations

from typing import Any

import cdk8s
import pytest

from k8s.common import raw

CONFIG_MAP = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {
        "name": "settings",
        "namespace": "curvine",
        "labels": {"app.kubernetes.io/part-of": "hyperpod-kvcache"},
        "annotations": {"note": "written by hand"},
    },
    "data": {"a": "1"},
}
CLUSTER_ROLE = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "ClusterRole",
    "metadata": {"name": "reader"},
    "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
}


@pytest.mark.parametrize("manifest", [CONFIG_MAP, CLUSTER_ROLE], ids=["namespaced", "bare"])
def test_a_raw_object_is_rendered_exactly_as_written(manifest: dict[str, Any]) -> None:
    """Namespace, labels and annotations only where given, every other field as it is."""
    chart = cdk8s.Chart(cdk8s.App(), "chart", disable_resource_name_hashes=True)
    raw(chart, "object", manifest)
    assert chart.to_json() == [manifest]
