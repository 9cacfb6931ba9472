"""Kyverno ClusterPolicy that points each endpoint's L2 at Curvine when its Pods are admitted.

The operator re-renders its Deployment on every reconcile, so an edit of the Deployment is undone;
a mutation of the Pod at CREATE is not, because the operator never edits Pods. One rule per
endpoint; failurePolicy Fail so a Pod never starts without its L2 when Kyverno is down.

Which webhook: Kyverno folds every policy without ``webhookConfiguration.matchConditions`` into
one shared webhook per failure policy, matched on kind and operation only (Kyverno 1.18,
pkg/controllers/webhook/controller.go ``buildForPoliciesMutation``): a fail-closed rule there makes
every Pod creation outside kube-system and Kyverno's namespace wait on Kyverno. With
matchConditions the policy gets a webhook of its own carrying them, so the API server calls Kyverno
only for the endpoints' Pods; every other Pod is admitted whether Kyverno is up or not.

Which container: the operator does not document the model container's name (the AWS walk-through
patches ``containers[0]``; the HyperPod SDK's log example names it ``inference``), but it always
injects ``LMCACHE_REMOTE_URL`` into it when ``enableL2Cache`` is set. The rule therefore loops over
the Pod's containers (Kyverno ``foreach``) and patches only those that carry that variable, whatever
their name or position. Which Pods: the walk-through selects the endpoint's Pods with
``app=<InferenceEndpointConfig name>``, the label the operator puts on them.
"""

from __future__ import annotations

import hashlib
from typing import Any

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from k8s.common import ENDPOINT_POD_LABEL, labels, raw
from k8s.endpoints import l1_env
from k8s.names import POLICY, PVC, REMOTE_URL_ENV
from k8s.observability import observability_env, observability_mounts, observability_volumes

KYVERNO_REPOSITORY = "https://kyverno.github.io/kyverno/"  # Kyverno's Helm chart repository
VOLUME = "curvine-l2"
CONTAINERS = "request.object.spec.containers"
# JMESPath: how many env entries of the looped container are named LMCACHE_REMOTE_URL (0 when the
# container has no env at all: `[]` stands in for null).
CARRIES_REMOTE_URL = f"{{{{ element.env[?name=='{REMOTE_URL_ENV}'] || `[]` | length(@) }}}}"


def l2_url(config: AppConfig) -> str:
    """LMCache's fs connector URL for the mount (host and port are ignored by the connector)."""
    return f"fs://localhost:0{config.kvcache.l2_mount_path}/"


def l2_env(config: AppConfig) -> list[dict[str, str]]:
    """The env the vLLM container must carry (same keys replace the operator's values)."""
    return [
        {"name": REMOTE_URL_ENV, "value": l2_url(config)},
        {"name": "LMCACHE_REMOTE_SERDE", "value": "naive"},
        {"name": "PYTHONHASHSEED", "value": "0"},
    ]


def l2_mounts(config: AppConfig, e: EndpointConfig) -> list[dict[str, str]]:
    # subPath gives each endpoint its own directory while the URL stays the documented one.
    return [{"name": VOLUME, "mountPath": config.kvcache.l2_mount_path, "subPath": e.name}]


def l2_volumes(claim: str = PVC) -> list[dict[str, Any]]:
    return [{"name": VOLUME, "persistentVolumeClaim": {"claimName": claim}}]


RULE_NAME_MAX = 63  # Kyverno's CRD: spec.rules[].name maxLength


def rule_name(e: EndpointConfig) -> str:
    """``l2-<namespace>-<name>``; when that is too long, its first 54 characters and a hash of
    the whole, so two long names that share a prefix still make two rules (Kyverno refuses a
    policy whose rule names repeat)."""
    name = f"l2-{e.namespace}-{e.name}"
    if len(name) <= RULE_NAME_MAX:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: RULE_NAME_MAX - len(digest) - 1]}-{digest}"


def _match(e: EndpointConfig) -> dict[str, Any]:
    """The endpoint's Pods, at creation."""
    resources = {
        "kinds": ["Pod"],
        "operations": ["CREATE"],
        "namespaces": [e.namespace],
        "selector": {"matchLabels": {ENDPOINT_POD_LABEL: e.name}},
    }
    return {"any": [{"resources": resources}]}


def _patch(config: AppConfig, e: EndpointConfig, claim: str) -> dict[str, Any]:
    """The strategic-merge patch of one looped container (and the Pod's volumes)."""
    container = {
        "name": "{{ element.name }}",
        # LMCache's metrics join vLLM's /metrics once the multiprocess dir is set.
        # Operator 3.2 drops the endpoint's own LMCACHE_* entries: the L1 size comes from here.
        "env": [*l2_env(config), *l1_env(e), *observability_env(config)],
        "volumeMounts": [*l2_mounts(config, e), *observability_mounts(config)],
    }
    volumes = [*l2_volumes(claim), *observability_volumes(config)]
    return {"spec": {"containers": [container], "volumes": volumes}}


def rule(config: AppConfig, e: EndpointConfig, claim: str = PVC) -> dict[str, Any]:
    """``claim``: the L2 claim (``k8s.l2_volume.l2_claim``; with FSx named after the file
    system)."""
    carries_url = {"key": CARRIES_REMOTE_URL, "operator": "GreaterThan", "value": 0}
    foreach = {
        "list": CONTAINERS,
        "preconditions": {"all": [carries_url]},
        "patchStrategicMerge": _patch(config, e, claim),
    }
    return {"name": rule_name(e), "match": _match(e), "mutate": {"foreach": [foreach]}}


def l2_endpoints(config: AppConfig) -> list[EndpointConfig]:
    return list(config.kvcache.mounted_endpoints)


def _cel_list(values: list[str]) -> str:
    # Namespaces and endpoint names are DNS labels (joined by '/'): no quote to escape.
    return "[" + ", ".join(f"'{v}'" for v in sorted(set(values))) + "]"


def match_conditions(endpoints: list[EndpointConfig]) -> list[dict[str, str]]:
    """CEL conditions of the policy's own webhook: the API server calls Kyverno only for a Pod
    of one of ``endpoints``: in its namespace and labelled with its name, as a pair, so an
    endpoint on another backend that shares a name or a namespace with one of them is never
    held up by Kyverno. Each expression is false, never an error, for any other Pod (an error
    would apply failurePolicy Fail)."""
    label = f"object.metadata.labels['{ENDPOINT_POD_LABEL}']"
    return [
        {
            "name": "endpoint-namespace",
            "expression": f"request.namespace in {_cel_list([e.namespace for e in endpoints])}",
        },
        {
            "name": "endpoint-pod",
            "expression": f"has(object.metadata.labels) && '{ENDPOINT_POD_LABEL}' in "
            f"object.metadata.labels && request.namespace + '/' + {label} in "
            f"{_cel_list([f'{e.namespace}/{e.name}' for e in endpoints])}",
        },
    ]


class PolicyChart(cdk8s.Chart):
    def __init__(self, scope: Construct, id: str, *, config: AppConfig, claim: str = PVC):
        # Equivalent mutant: `disable_resource_name_hashes` only affects names cdk8s generates; the
        # ClusterPolicy is given its name, so it does not change
        super().__init__(scope, id, disable_resource_name_hashes=True)  # pragma: no mutate
        endpoints = l2_endpoints(config)
        rules = [rule(config, e, claim) for e in endpoints]
        if not rules:
            return
        description = (
            f"Mount {claim} into the endpoint container that carries "
            # Equivalent mutants: the text of the policy's description annotation, which people
            # read and nothing parses
            "LMCACHE_REMOTE_URL and point LMCache L2 at it "  # pragma: no mutate
            "(Pods only, at CREATE)."  # pragma: no mutate
        )
        webhook = {
            "failurePolicy": "Fail",
            "timeoutSeconds": 15,
            "matchConditions": match_conditions(endpoints),
        }
        policy = {
            "apiVersion": "kyverno.io/v1",
            "kind": "ClusterPolicy",
            "metadata": {
                "name": POLICY,
                # Equivalent mutant: the policy's `app.kubernetes.io/component` value; nothing
                # selects on it (teardown and the ownership checks use managed-by and part-of), as
                # for the foundation charts
                "labels": labels(POLICY, "policy"),  # pragma: no mutate
                "annotations": {
                    # Equivalent mutant: the key of the `policies.kyverno.io/description`
                    # annotation; Kyverno and this project only show it to people (kubectl describe,
                    # policy reports), no decision reads it
                    "policies.kyverno.io/description": description,  # pragma: no mutate
                    # No rules generated for Deployments: the operator owns its Deployment and
                    # would undo (and fight) a mutation of it; Pods are never re-rendered.
                    "pod-policies.kyverno.io/autogen-controllers": "none",
                },
            },
            "spec": {
                "background": False,
                "admission": True,
                "webhookConfiguration": webhook,
                "rules": rules,
            },
        }
        # Equivalent mutant: the construct id of the ClusterPolicy; the object is given its name, so
        # the id reaches neither the manifest nor the owned-manifest resource
        raw(self, "policy", policy)  # pragma: no mutate
