"""Ownership-aware apply of the Kubernetes layer on a cluster the app does not own.

``Custom::HyperPodOwnedManifest`` replaces CDK's ``KubernetesManifest`` (``kubectl apply``, then
``kubectl delete`` of every object on destroy) in existing-cluster mode. Its handler (the Lambda
package ``handler/`` beside this file) talks to the API server with the official Kubernetes
client: it creates what is absent with the annotation
``hyperpod-kvcache/owner: <project>-<environment>``, updates only objects carrying that mark,
refuses with one line (before changing anything) what exists and is not ours, and on Delete
removes only marked objects. A failed Create answers with
the Provider framework's CREATE_FAILED marker, whose Delete never reaches the handler.

The handler runs as the kubectl provider's own role (it already holds the cluster-admin access
entry and eks:DescribeCluster), in the same subnets and security group for a private endpoint,
and so does the Provider framework's function: from there the handler calls the EKS API and the
framework the Lambda API (Invoke) and S3 (its answer to CloudFormation); docs/existing-cluster.md
lists the routes and ``preflight`` checks them. It
ships with the ``kubernetes`` client pinned in requirements.txt and its pure-Python dependencies,
copied from this virtualenv by a local bundler (no Docker, no network).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aws_cdk import CustomResource, Duration
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import custom_resources as cr
from constructs import Construct

from infra.custom_resources.owned_manifest.handler.kinds import Ref, UnknownKind
from infra.custom_resources.provider import HandlerBundle, handler_function, log_groups

HANDLER_DIR = Path(__file__).resolve().parent / "handler"
HANDLER_PACKAGE = "owned_manifest"  # the handler is owned_manifest.index.on_event
RESOURCE_TYPE = "Custom::HyperPodOwnedManifest"
# The kubernetes client and what ``import kubernetes`` pulls in; all pure Python (compiled
# speed-ups of PyYAML and charset-normalizer are left out, both fall back to Python code).
BUNDLED_DISTRIBUTIONS = (
    "kubernetes",
    "urllib3",
    "six",
    "python-dateutil",
    "PyYAML",
    "requests",
    "requests-oauthlib",
    "oauthlib",
    "certifi",
    "charset-normalizer",
    "idna",
    "websocket-client",
    "durationpy",
)


def _skip(relative: Path) -> bool:
    parts = relative.parts
    if relative.suffix == ".so" or parts[0] in {"_yaml", "bin"}:
        return True  # compiled speed-ups (pure-Python fallbacks exist) and console scripts
    # The asyncio client (needs aiohttp) and the package's own tests.
    return parts[0] == "kubernetes" and len(parts) > 1 and parts[1] in {"aio", "test", "e2e_test"}


# The handler package plus the kubernetes client and what it imports.
BUNDLE = HandlerBundle(HANDLER_DIR, HANDLER_PACKAGE, BUNDLED_DISTRIBUTIONS, _skip)


def handler_code() -> lambda_.Code:
    return BUNDLE.code()


def refs_of(objects: Sequence[Mapping[str, Any]]) -> list[Ref]:
    """Every object's ref; an unknown kind fails the synth with one line."""
    try:
        return [Ref.of(dict(o)) for o in objects]
    except UnknownKind as e:
        raise ValueError(str(e)) from e


def _ref_json(ref: Ref) -> dict[str, Any]:
    meta = {"name": ref.name, **({"namespace": ref.namespace} if ref.namespace else {})}
    return {"apiVersion": ref.api_version, "kind": ref.kind, "metadata": meta}


class OwnedManifests(Construct):
    """One handler and Provider; ``add`` declares one ``Custom::HyperPodOwnedManifest``."""

    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cluster_name: str,
        owner: str,
        role: iam.IRole,
        vpc: ec2.IVpc | None = None,
        subnet_ids: Sequence[str] = (),
        security_group_id: str | None = None,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_MONTH,
    ) -> None:
        super().__init__(scope, id)
        self.cluster_name = cluster_name
        self.owner = owner
        network: dict[str, Any] = {}
        if subnet_ids:
            network = {
                "vpc": vpc,
                "vpc_subnets": ec2.SubnetSelection(
                    subnets=[
                        ec2.Subnet.from_subnet_id(self, f"Subnet{i}", s)
                        for i, s in enumerate(subnet_ids)
                    ]
                ),
                "security_groups": [
                    ec2.SecurityGroup.from_security_group_id(
                        self, "SecurityGroup", security_group_id
                    )
                ]
                if security_group_id
                else None,
            }
        log_group = log_groups(self, retention=log_retention)
        self.on_event_function = handler_function(
            self,
            "OnEvent",
            code=handler_code(),
            handler=f"{HANDLER_PACKAGE}.index.on_event",
            role=role,
            timeout=Duration.minutes(5),
            memory_size=512,
            log_group=log_group("HandlerLogs"),
            description="Kubernetes objects applied with an ownership check (existing cluster)",
            **network,
        )
        self.provider = cr.Provider(
            self,
            "Provider",
            on_event_handler=self.on_event_function,
            log_group=log_group("FrameworkLogs"),
            **network,
        )

    def add(
        self,
        id: str,
        objects: Sequence[Mapping[str, Any]],
        *,
        preflight: Sequence[Mapping[str, Any]] = (),
        present: Sequence[Mapping[str, Any]] = (),
        absent: Sequence[Mapping[str, Any]] = (),
        hints: Mapping[str, str] | None = None,
    ) -> CustomResource:
        refs_of(objects)
        later = refs_of(preflight)
        return CustomResource(
            self,
            id,
            service_token=self.provider.service_token,
            resource_type=RESOURCE_TYPE,
            service_timeout=Duration.minutes(10),
            properties={
                "ClusterName": self.cluster_name,
                "Owner": self.owner,
                "Manifest": json.dumps(list(objects), sort_keys=True),
                "Preflight": json.dumps([_ref_json(r) for r in later]),
                "Present": json.dumps(list(present)),
                "Absent": json.dumps(list(absent)),
                "Hints": json.dumps(dict(hints or {}), sort_keys=True),
            },
        )
