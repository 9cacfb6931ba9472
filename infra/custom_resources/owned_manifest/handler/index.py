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


def _json(props: dict[str, Any], key: str, default: Any) -> Any:
    value = props.get(key)
    # Equivalent mutant: "" becomes "XXXX" in the missing-value test; the construct sends every JSON
    # property through json.dumps, so a property is never "" and only None (absent) reaches the test
    return default if value in (None, "") else json.loads(value)  # pragma: no mutate


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
    # Equivalent mutant: the default for a missing ResourceProperties becomes None; CloudFormation
    # always sends ResourceProperties (it carries ServiceToken)
    props = event.get("ResourceProperties", {})  # pragma: no mutate
    # Equivalent mutant: the default for a missing ClusterName becomes None; the construct
    # (infra/custom_resources/owned_manifest/construct.py) always sets ClusterName
    name, owner = (
        str(props.get("ClusterName", "")),  # pragma: no mutate
        str(props.get("Owner", "")),  # pragma: no mutate
    )  # pragma: no mutate
    # Equivalent mutant: the default for a missing LogicalResourceId becomes None; CloudFormation
    # always sends LogicalResourceId
    physical = f"owned-manifest:{owner}:{event.get('LogicalResourceId', '')}"  # pragma: no mutate
    # Equivalent mutant: the default for a missing Manifest becomes None; the construct always sets
    # Manifest
    objects = _json(props, "Manifest", [])  # pragma: no mutate
    if kind == "Delete":
        physical = str(event.get("PhysicalResourceId") or physical)
        try:
            cluster = cluster or Cluster(api_client(_cluster(), name))
        except ClusterGone:
            log.info("EKS cluster %s is gone: nothing to delete", name)
            return {"PhysicalResourceId": physical}
        except Exception as e:  # Delete never wedges the stack
            log.warning("cannot reach EKS cluster %s (%s): objects left in place", name, e)
            return {"PhysicalResourceId": physical}
        for line in delete(cluster, owner, objects, wait):
            # Equivalent mutant: log.info(line) instead of log.info("%s", line); logging only
            # %-formats when given args, so the record's message is the line either way (a "%" in it
            # included)
            log.info("%s", line)  # pragma: no mutate
        return {"PhysicalResourceId": physical}
    if not owner:
        raise OwnershipError("Owner is empty: the construct must pass the owner value")
    cluster = cluster or Cluster(api_client(_cluster(), name))
    # Equivalent mutants: reads OldResourceProperties on Create too; CloudFormation sends it only
    # with Update, so Create still gets {} (Delete returned before this line); the default for an
    # Update without OldResourceProperties becomes None; CloudFormation always sends
    # OldResourceProperties with Update
    old = event.get("OldResourceProperties", {}) if kind == "Update" else {}  # pragma: no mutate
    done = apply(
        cluster,
        owner,
        objects,
        preflight=[Ref.of(r) for r in _json(props, "Preflight", [])],
        present=[Check.of(c) for c in _json(props, "Present", [])],
        absent=[Check.of(c) for c in _json(props, "Absent", [])] if kind == "Create" else [],
        # Equivalent mutant: the default for missing Hints becomes None; check() reads `hints or
        # {}`, and the construct always sets Hints
        hints=_json(props, "Hints", {}),  # pragma: no mutate
        # Equivalent mutant: the default for old properties without Manifest becomes None; old
        # properties are an earlier Create or Update's, and the construct always sets Manifest
        previous=_json(old, "Manifest", [])  # pragma: no mutate
        if old.get("Owner") == owner
        else [],  # pragma: no mutate
    )
    for line in done:
        # Equivalent mutant: the lines Create and Update log: logging only %-formats when given
        # args, so the record's message is the line either way (a "%" in it included)
        log.info("%s", line)  # pragma: no mutate
    return {"PhysicalResourceId": physical if kind == "Create" else event["PhysicalResourceId"]}
