"""Shared fixtures for the operations CLI tests.

Doubles: AWS calls run against moto (CloudFormation, EC2, CloudWatch Logs, ELBv2, EKS, STS) or
botocore's Stubber where moto lacks the API or drops fields (SageMaker DescribeCluster's
TieredStorageConfig, Service Quotas ListServiceQuotas, EKS add-on status). Kubernetes calls go
through the official client to ``FakeKube``, a local in-memory API server
(tests/doubles/fake_kube.py).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from moto import mock_aws

from infra.config import AppConfig
from tests.doubles.fake_kube import FakeKube
from tests.support.config import make_cfg
from tests.support.endpoint_objects import recorded_deployment, rollout_simulator
from tests.support.teardown_world import World


@pytest.fixture(autouse=True)
def _no_real_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.setenv(key, "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def cfg() -> AppConfig:
    return make_cfg()


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube() as fake:
        fake.after_write.append(rollout_simulator)
        yield fake


@pytest.fixture
def deployment() -> dict[str, Any]:
    return copy.deepcopy(recorded_deployment())


@pytest.fixture
def world(kube: FakeKube) -> Iterator[World]:
    """This environment and its neighbours in moto and FakeKube (tests.support.teardown_world)."""
    with mock_aws():
        w = World(kube)
        w.build()
        yield w
