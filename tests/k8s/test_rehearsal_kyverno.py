"""Deploy rehearsal: which Pod creations depend on Kyverno.

Double: ``tests.k8s.kyverno_eval`` computes the webhooks Kyverno 1.18 registers for the rendered
ClusterPolicy and which of them the API server calls for a Pod (a model of Kyverno's webhook
controller and of admission webhook matching, from their sources; no Kyverno or API server can run
here), with the chart's webhook settings from its values.yaml. The policy is the real one: the
rendered YAML of each environment.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from infra.config import AppConfig
from k8s.policy import POLICY
from tests.k8s.conftest import SCHEMAS, crd_schema, env_config, strict
from tests.k8s.kyverno_eval import (
    apply_policy,
    called_webhooks,
    chart_webhook_selectors,
    registered_webhooks,
)

KYVERNO_CRD = SCHEMAS / "kyverno" / "kyverno.io_clusterpolicies.yaml"
ENVS = ("dev", "test", "prod", "fsx")  # fsx: tests/k8s/conftest.py FSX_VARIANT
OPERATOR_POD = yaml.safe_load(
    (Path(__file__).parent / "fixtures" / "operator_pod.yaml").read_text()
)
# Namespaces whose Pods must never wait on Kyverno: the cluster's, HyperPod's and the add-ons'.
OTHER_NAMESPACES = ("aws-hyperpod", "cert-manager", "hyperpod-inference-system", "default",
                    "kube-system", "amazon-cloudwatch")  # fmt: skip
WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet"}
Obj = dict[str, Any]


CHART_VALUES: Obj = yaml.safe_load((SCHEMAS / "kyverno" / "values.yaml").read_text())


def webhooks(objs: list[Obj], config: AppConfig) -> list[Obj]:
    """The resource mutating webhooks Kyverno registers for the rendered policies, with the
    chart's default webhook settings."""
    policies = [o for o in objs if o["kind"] == "ClusterPolicy"]
    return registered_webhooks(
        policies, chart_webhook_selectors(CHART_VALUES, config.kvcache.kyverno.namespace)
    )


def pod(namespace: str, labels: dict[str, str] | None = None, spec: Obj | None = None) -> Obj:
    meta: Obj = {"name": "p", "namespace": namespace}
    if labels is not None:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": spec or {"containers": [{"name": "c", "image": "busybox:1.36"}]}}  # fmt: skip


def fail_closed(hooks: list[Obj], p: Obj) -> list[str]:
    """Names of the fail-closed webhooks creating ``p`` goes through: while Kyverno serves no
    request, each of them refuses it."""
    return [h["name"] for h in called_webhooks(hooks, p, "CREATE") if h["failurePolicy"] == "Fail"]


def rendered_pods(objs: list[Obj]) -> list[tuple[str, Obj]]:
    """A Pod of every workload and CronJob the charts render (the evictor in the endpoint
    namespaces among them)."""
    out = []
    for o in objs:
        if o["kind"] in WORKLOADS:
            template = o["spec"]["template"]
        elif o["kind"] == "CronJob":
            template = o["spec"]["jobTemplate"]["spec"]["template"]
        else:
            continue
        ns = o["metadata"]["namespace"]
        labels = template["metadata"].get("labels") or {}
        out.append((f"{o['kind']} {ns}/{o['metadata']['name']}",
                    pod(ns, labels, template["spec"])))  # fmt: skip
    return out


@pytest.mark.parametrize("env", ENVS)
def test_pods_outside_the_endpoints_are_created_while_kyverno_is_down(
    rendered_envs: dict[str, list[Obj]], env: str
) -> None:
    """Only an endpoint's own Pods wait on Kyverno's fail-closed webhook: Curvine's, the
    evictor's, the add-ons' and HyperPod's Pods are admitted whether Kyverno is up or not, even
    one labelled like an endpoint outside the endpoint's namespace."""
    objs, config = rendered_envs[env], env_config(env)
    hooks = webhooks(objs, config)
    names = {e.name for e in config.kvcache.endpoints}
    candidates = [
        *rendered_pods(objs),
        *((f"Pod {ns} app={n}", pod(ns, {"app": n})) for ns in OTHER_NAMESPACES for n in names),
        *((f"Pod {ns} (no labels)", pod(ns)) for ns in OTHER_NAMESPACES),
        *((f"Pod {ns} app=other", pod(ns, {"app": "other"}))
          for ns in {e.namespace for e in config.kvcache.endpoints}),
        *((f"Pod {ns} (no labels)", pod(ns)) for ns in {e.namespace for e in
                                                        config.kvcache.endpoints}),
    ]  # fmt: skip
    if config.kvcache.curvine.enabled:
        assert any(ref.startswith("StatefulSet curvine/") for ref, _ in candidates)
    blocked = [f"{ref}: {fail_closed(hooks, p)}" for ref, p in candidates if fail_closed(hooks, p)]
    assert not blocked, f"{env}: created only while Kyverno serves:\n" + "\n".join(blocked)


@pytest.mark.parametrize("env", ENVS)
def test_an_endpoint_pod_still_waits_for_its_l2_mutation(
    rendered_envs: dict[str, list[Obj]], env: str
) -> None:
    """Each endpoint with L2 keeps its guarantee: its Pod goes through one fail-closed webhook,
    the policy's own, whose Kyverno rule repoints its L2."""
    objs, config = rendered_envs[env], env_config(env)
    hooks = webhooks(objs, config)
    policy = next(o for o in objs if o["kind"] == "ClusterPolicy")
    # Kyverno's CRD accepts the webhook settings (strictly: no field it would drop).
    jsonschema.validate(policy, strict(crd_schema(KYVERNO_CRD, "v1")))
    for e in (e for e in config.kvcache.endpoints if e.enable_l2_cache):
        p = copy.deepcopy(OPERATOR_POD)
        p["metadata"].update(namespace=e.namespace, labels={"app": e.name})
        assert fail_closed(hooks, p) == [f"mutate.kyverno.svc-fail-finegrained-{POLICY}"], e.name
        mutated = apply_policy(policy, p, "CREATE")
        assert mutated != p, f"{e.name}: the policy's webhook is called but no rule applies"
    (own,) = hooks
    assert own["timeoutSeconds"] == 15  # the policy's, above Kyverno's 10 s default


def test_a_policy_without_match_conditions_holds_every_pod(
    rendered: list[Obj], dev_config: AppConfig
) -> None:
    """The model is not vacuous: the same policy without matchConditions lands in Kyverno's
    shared fail-closed webhook, which every Pod outside kube-system and Kyverno's namespace goes
    through."""
    policy = copy.deepcopy(next(o for o in rendered if o["kind"] == "ClusterPolicy"))
    del policy["spec"]["webhookConfiguration"]["matchConditions"]
    hooks = webhooks([policy], dev_config)
    assert [h["name"] for h in hooks] == ["mutate.kyverno.svc-fail"]
    for ns in ("curvine", "cert-manager", "aws-hyperpod"):
        assert fail_closed(hooks, pod(ns)) == ["mutate.kyverno.svc-fail"], ns
    for ns in ("kube-system", dev_config.kvcache.kyverno.namespace):
        assert fail_closed(hooks, pod(ns)) == [], ns
