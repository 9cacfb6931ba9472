"""Preflight against the live cluster this app created: the creator's cluster-admin access that
EKS fixed when it created the cluster, compared with what the config would give.

Double: botocore's Stubber for EKS DescribeCluster (its answer is checked against the service
model, ``accessConfig`` included); moto 5.2's EKS does not return ``accessConfig``.
"""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from scripts.lib.clients import Clients
from scripts.lib.preflight.owned import check_live_cluster
from tests.support.config import make_cfg

ADMIN = "arn:aws:iam::111122223333:role/Admin"


def _clients(created_with: bool) -> tuple[Clients, Stubber]:
    eks = boto3.client("eks", region_name="us-west-2")
    stub = Stubber(eks)
    cluster = {
        "name": "hyperpod-kvcache",
        "version": "1.34",
        "accessConfig": {
            "bootstrapClusterCreatorAdminPermissions": created_with,
            "authenticationMode": "API",
        },
    }
    stub.add_response("describe_cluster", {"cluster": cluster}, {"name": "hyperpod-kvcache"})
    stub.activate()
    return Clients("us-west-2", aws_factory=lambda _: eks), stub


def _creator_row(created_with: bool, **eks: Any) -> tuple[str, str, str]:
    clients, stub = _clients(created_with)
    checks, _, _ = check_live_cluster(clients, make_cfg(eks=eks))
    stub.assert_no_pending_responses()
    (row,) = [c for c in checks if c.stage == "creator admin"]
    return row.status, row.detail, row.fix or ""


def test_adding_an_admin_to_a_cluster_created_with_the_creator_admin_fails_preflight() -> None:
    """The config now gives the creator no access (an admin principal is listed), the cluster
    was created with it: CloudFormation would try to replace the cluster."""
    status, detail, fix = _creator_row(True, admin_principal_arns=[ADMIN])
    assert status == "fail"
    assert "would replace the cluster" in detail
    assert fix == "set eks.bootstrap_creator_admin: true"


@pytest.mark.parametrize(
    ("created_with", "eks"),
    [
        (True, {}),  # no admin principal: the creator keeps cluster-admin
        (False, {"admin_principal_arns": [ADMIN]}),
        (True, {"admin_principal_arns": [ADMIN], "bootstrap_creator_admin": True}),
    ],
)
def test_a_config_that_matches_the_cluster_passes(created_with: bool, eks: dict[str, Any]) -> None:
    assert _creator_row(created_with, **eks)[0] == "pass"
