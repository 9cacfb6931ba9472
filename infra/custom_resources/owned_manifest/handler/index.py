"""Entry point for ``aws_cdk.custom_resources.Provider``: ``on_event`` (no is_complete: an apply
takes seconds).

Properties (strings or JSON strings, as CloudFormation delivers them): ``ClusterName``, ``Owner``,
``Manifest`` (the objects), ``Preflight`` (refs of later applies, checked up front), ``Present``
and ``Absent`` (checks, Create only for Absent), ``Hints`` (object key -> the fix).

Delete never fails: a cluster or object that is gone counts as done, objects that are not ours
are left, and an object that cannot be deleted is logged and left. After deleting claims it waits,
bounded, for their volumes to be deleted by their provisioner (``volumes.py``).
"""

from __future__ import annotations

import json
import logging
from typing import Any

import boto3

from .cluster import Cluster
from .connect import ClusterGone, api_client
from .kinds import Ref
from .ownership import Check, OwnershipError, apply, delete
from .volumes import VolumeWait

log = logging.getLogger(__name__)
logging.getLogger().setLevel(logging.INFO)


def _json(props: dict[str, Any], key: str) -> Any:
    # The construct sets every property, JSON ones through json.dumps.
    return json.loads(props[key])


def _cluster() -> Any:
    return boto3.session.Session()


def on_event(
    event: dict[str, Any],
    context: Any,
    *,
    cluster: Cluster | None = None,
    wait: VolumeWait | None = None,
) -> dict[str, Any]:
    kind = event["RequestType"]
    # CloudFormation sends ResourceProperties and LogicalResourceId with every request, the
    # PhysicalResourceId with Update and Delete, OldResourceProperties with Update.
    props = event["ResourceProperties"]
    name, owner = props["ClusterName"], props["Owner"]
    physical = f"owned-manifest:{owner}:{event['LogicalResourceId']}"
    objects = _json(props, "Manifest")
    if kind == "Delete":
        physical = event["PhysicalResourceId"]
        try:
            cluster = cluster or Cluster(api_client(_cluster(), name))
        except ClusterGone:
            log.info("EKS cluster %s is gone: nothing to delete", name)
            return {"PhysicalResourceId": physical}
        except Exception as e:  # Delete never wedges the stack
            log.warning("cannot reach EKS cluster %s (%s): objects left in place", name, e)
            return {"PhysicalResourceId": physical}
        for line in delete(cluster, owner, objects, wait):
            log.info(line)
        return {"PhysicalResourceId": physical}
    if not owner:
        raise OwnershipError("Owner is empty: the construct must pass the owner value")
    cluster = cluster or Cluster(api_client(_cluster(), name))
    old = event["OldResourceProperties"] if kind == "Update" else {}
    done = apply(
        cluster,
        owner,
        objects,
        preflight=[Ref.of(r) for r in _json(props, "Preflight")],
        present=[Check.of(c) for c in _json(props, "Present")],
        absent=[Check.of(c) for c in _json(props, "Absent")] if kind == "Create" else [],
        hints=_json(props, "Hints"),
        previous=_json(old, "Manifest") if old.get("Owner") == owner else [],
    )
    for line in done:
        log.info(line)
    return {"PhysicalResourceId": physical if kind == "Create" else event["PhysicalResourceId"]}
