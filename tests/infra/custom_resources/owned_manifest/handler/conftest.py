"""The fake API server and a Cluster on it, for each owned-manifest handler test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from infra.custom_resources.owned_manifest.handler.cluster import Cluster
from tests.doubles.ownership_fake_kube import ApplyFakeKube


@pytest.fixture
def kube() -> Iterator[ApplyFakeKube]:
    with ApplyFakeKube() as fake:
        yield fake


@pytest.fixture
def cluster(kube: ApplyFakeKube) -> Cluster:
    return Cluster(kube.api_client())
