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
from k8s.common import raw
from k8s.l2_pod import l2_settings
from k8s.names import ENDPOINT_POD_LABEL, POLICY, REMOTE_URL_ENV, labels

KYVERNO_REPOSITORY = "https://kyverno.github.io/kyverno/"  # Kyverno's Helm chart repository
CONTAINERS = "request.object.spec.containers"
# JMESPath: how many env entries of the looped container are named LMCACHE_REMOTE_URL (0 when the
# container has no env at all: `[]` stands in for null).
CARRIES_REMOTE_URL = f"{{{{ element.env[?name=='{REMOTE_URL_ENV}'] || `[]` | length(@) }}}}"


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
    settings = l2_settings(config, e, claim)
    container = {
        "name": "{{ element.name }}",
        "env": list(settings.env),
        "volumeMounts": list(settings.mounts),
    }
    return {"spec": {"containers": [container], "volumes": list(settings.volumes)}}


def rule(config: AppConfig, e: EndpointConfig, claim: str) -> dict[str, Any]:
    """``claim``: the L2 claim (``k8s.l2_volume.l2_claim``: on Curvine named after its size,
    with FSx after the file system)."""
    carries_url = {"key": CARRIES_REMOTE_URL, "operator": "GreaterThan", "value": 0}
    foreach = {
        "list": CONTAINERS,
        "preconditions": {"all": [carries_url]},
        "patchStrategicMerge": _patch(config, e, claim),
    }
    return {"name": rule_name(e), "match": _match(e), "mutate": {"foreach": [foreach]}}


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
    def __init__(self, scope: Construct, id: str, *, config: AppConfig, claim: str):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        endpoints = list(config.kvcache.mounted_l2_endpoints)
        rules = [rule(config, e, claim) for e in endpoints]
        if not rules:
            return
        description = (
            f"Mount {claim} into the endpoint container that carries "
            "LMCACHE_REMOTE_URL and point LMCache L2 at it "
            "(Pods only, at CREATE)."
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
                "labels": labels(POLICY, "policy"),
                "annotations": {
                    "policies.kyverno.io/description": description,
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
        raw(self, "policy", policy)
