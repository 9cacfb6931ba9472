"""Workload: one value gives a workload's selector and Pod labels (plain Python, no double)."""

from __future__ import annotations

import pytest

from k8s.common import Workload


def test_pod_labels_contain_the_selector() -> None:
    for w in (Workload("curvine-master", "master"), Workload("x", "csi", selector={"app": "x"})):
        assert w.match_labels.items() <= w.pod_labels.items()


def test_a_selector_that_contradicts_the_standard_labels_is_refused() -> None:
    with pytest.raises(ValueError, match="contradicts the standard labels"):
        Workload("curvine-master", "master", selector={"app.kubernetes.io/part-of": "curvine"})
