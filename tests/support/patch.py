"""The recorded endpoint the patch tests patch."""

from __future__ import annotations

from typing import Any

from k8s.l2_pod import l2_settings
from k8s.names import curvine_claim
from scripts.lib.clients import Clients
from tests.doubles.fake_kube import FakeKube
from tests.support.endpoint_objects import (
    DEPLOYMENTS,
    IECS,
    OPERATOR,
    endpoint_config,
    operator_deployment,
    recorded_cfg,
    recorded_endpoint,
)

CFG = recorded_cfg()
REF = recorded_endpoint(CFG)
SETTINGS = l2_settings(CFG, REF, curvine_claim(CFG))


def _seed(kube: FakeKube, deployment: dict[str, Any], operator_replicas: int = 2) -> Clients:
    kube.put(DEPLOYMENTS, deployment)
    kube.put(OPERATOR, operator_deployment(operator_replicas))
    kube.put(IECS, endpoint_config())
    return Clients("us-west-2", aws_factory=_no_aws, kube_factory=kube.api_client)


def _no_aws(service: str) -> Any:
    raise AssertionError(f"patch must not call AWS ({service})")
