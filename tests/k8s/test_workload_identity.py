"""Workload: one value gives a workload's selector and Pod labels (plain Python, no double)."""

from __future__ import annotations

import pytest

from k8s.names import PART_OF, Workload


def test_pod_labels_contain_the_selector() -> None:
    for w in (Workload("curvine-master", "master"), Workload("x", "csi", selector={"app": "x"})):
        assert w.match_labels.items() <= w.pod_labels.items()


def test_a_selector_that_contradicts_the_standard_labels_is_refused() -> None:
    with pytest.raises(ValueError, match="contradicts the standard labels"):
        Workload("curvine-master", "master", selector={"app.kubernetes.io/part-of": "curvine"})


def test_the_default_selector_is_the_name_and_the_project() -> None:
    w = Workload("curvine-master", "master")
    assert w.match_labels == {
        "app.kubernetes.io/name": "curvine-master",
        "app.kubernetes.io/part-of": PART_OF,
    }


def test_a_selector_may_repeat_the_standard_labels() -> None:
    """Only a contradiction is refused: repeating a label with its own value is fine."""
    w = Workload("csi-node", "csi", selector={"app.kubernetes.io/component": "csi", "app": "x"})
    assert w.pod_labels["app.kubernetes.io/component"] == "csi"
    assert w.match_labels == {"app.kubernetes.io/component": "csi", "app": "x"}
