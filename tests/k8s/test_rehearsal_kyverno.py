"""Deploy rehearsal: which Pod creations depend on Kyverno, and how Kyverno itself is run.

Doubles: ``tests.doubles.kyverno_eval`` computes the webhooks Kyverno 1.18 registers for the
rendered ClusterPolicy and which of them the API server calls for a Pod (a model of Kyverno's
webhook controller and of admission webhook matching, from their sources; no Kyverno or API
server can run here). ``tests.doubles.kyverno_chart`` merges the app's Helm values into the
chart's own values.yaml and renders the admission controller's Deployment and
PodDisruptionBudget as the chart's templates do (no helm binary here). The policy and the values
are the real ones: the rendered YAML of each environment, and the synthesized stack's HelmChart
resource.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from aws_cdk import CfnWaitConditionHandle, Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Template

from infra.cdk.context import new_app
from infra.config import AppConfig, parse_config
from infra.config.kvcache import MOUNTED_L2_BACKENDS
from infra.facts.versions import SUPPORTED_KUBERNETES
from k8s.app import build_charts, manifests
from k8s.common import INSTANCE_GROUP_LABEL
from k8s.kyverno import RELEASE, kyverno_values
from k8s.policy import POLICY
from k8s.render import KYVERNO_VALUES, kubectl_steps, render
from stacks.kvcache_stack import KvCacheStack
from tests.doubles.kyverno_chart import (
    CHART_VALUES,
    admission_objects,
    merged,
    unknown_keys,
)
from tests.doubles.kyverno_eval import (
    CelError,
    apply_policy,
    called_webhooks,
    cel,
    chart_webhook_selectors,
    registered_webhooks,
    selects,
)
from tests.support import cel_engine
from tests.support.config import BASE, SOURCE, env_config, with_overrides
from tests.support.objects import OPERATOR_POD
from tests.support.schemas import SCHEMAS, crd_schema, strict, validate

KYVERNO_CRD = SCHEMAS / "kyverno" / "kyverno.io_clusterpolicies.yaml"
# fsx, tiers: tests/support/config.py FSX_VARIANT, TIERS_VARIANT
ENVS = ("dev", "test", "prod", "fsx", "tiers")
# Namespaces whose Pods must never wait on Kyverno: the cluster's, HyperPod's and the add-ons'.
OTHER_NAMESPACES = (
    "aws-hyperpod",
    "cert-manager",
    "hyperpod-inference-system",
    "default",
    "kube-system",
    "amazon-cloudwatch",
)
WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet"}
Obj = dict[str, Any]


def webhooks(objs: list[Obj], config: AppConfig, values: Obj | None = None) -> list[Obj]:
    """The resource mutating webhooks Kyverno registers for the rendered policies, with the
    chart's webhook settings under the app's Helm values."""

    policies = [o for o in objs if o["kind"] == "ClusterPolicy"]
    chart = merged(kyverno_values(config) if values is None else values)
    return registered_webhooks(
        policies, chart_webhook_selectors(chart, config.kvcache.kyverno.namespace)
    )


def pod(namespace: str, labels: dict[str, str] | None = None, spec: Obj | None = None) -> Obj:
    meta: Obj = {"name": "p", "namespace": namespace}
    if labels is not None:
        meta["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": spec or {"containers": [{"name": "c", "image": "busybox:1.36"}]},
    }


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
        out.append((f"{o['kind']} {ns}/{o['metadata']['name']}", pod(ns, labels, template["spec"])))
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
        *(
            (f"Pod {ns} app=other", pod(ns, {"app": "other"}))
            for ns in {e.namespace for e in config.kvcache.endpoints}
        ),
        *(
            (f"Pod {ns} (no labels)", pod(ns))
            for ns in {e.namespace for e in config.kvcache.endpoints}
        ),
    ]
    if "curvine" in config.kvcache.l2_backends:
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
    validate(policy, strict(crd_schema(KYVERNO_CRD, "v1")))
    for e in config.kvcache.mounted_l2_endpoints:
        p = copy.deepcopy(OPERATOR_POD)
        p["metadata"].update(namespace=e.namespace, labels={"app": e.name})
        assert fail_closed(hooks, p) == [f"mutate.kyverno.svc-fail-finegrained-{POLICY}"], e.name
        mutated = apply_policy(policy, p, "CREATE")
        assert mutated != p, f"{e.name}: the policy's webhook is called but no rule applies"
    (own,) = hooks
    assert own["timeoutSeconds"] == 15  # the policy's, above Kyverno's 10 s default


@pytest.mark.parametrize("env", ENVS)
def test_pods_of_endpoints_without_a_shared_l2_never_wait_on_kyverno(
    rendered_envs: dict[str, list[Obj]], env: str
) -> None:
    """The policy mounts nothing for an endpoint on tieredstorage or none: its Pods are created
    whether Kyverno is up or not."""
    objs, config = rendered_envs[env], env_config(env)
    hooks = webhooks(objs, config)
    for e in (e for e in config.kvcache.endpoints if e.l2_backend not in MOUNTED_L2_BACKENDS):
        p = copy.deepcopy(OPERATOR_POD)
        p["metadata"].update(namespace=e.namespace, labels={"app": e.name})
        assert fail_closed(hooks, p) == [], e.name


def test_a_pod_sharing_a_name_with_an_endpoint_on_curvine_elsewhere_never_waits(
    dev_config: AppConfig,
) -> None:
    """Curvine endpoints a (namespace x) and b (namespace y), and a Pod labelled app=b in
    namespace x (another workload's): its namespace and its name each match one of the
    endpoints, the pair does not."""
    base = {**BASE["kvcache"]["endpoints"][0], "replicas": 1}
    endpoints = [
        {**base, "name": "a", "namespace": "x"},
        {**base, "name": "b", "namespace": "y"},
    ]
    overrides = {"kvcache.endpoints": endpoints, "hyperpod.gpu_group.instance_count": 2}
    config = parse_config(with_overrides(overrides), SOURCE, "dev")
    objs = [o for chart in manifests(build_charts(config)).values() for o in chart]
    hooks = webhooks(objs, config)
    held = {
        (ns, n): fail_closed(hooks, pod(ns, {"app": n}))
        for ns, n in (("x", "a"), ("y", "b"), ("x", "b"))
    }
    own = [f"mutate.kyverno.svc-fail-finegrained-{POLICY}"]
    assert held == {("x", "a"): own, ("y", "b"): own, ("x", "b"): []}


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


# ---- the Kyverno release --------------------------------------------------------------------


def _stack_values(config: AppConfig) -> Obj:
    """The Helm values the synthesized kvcache stack gives the Kyverno release."""
    app = new_app()
    ref = Stack(app, "ClusterRef")
    CfnWaitConditionHandle(ref, "NotEmpty")
    provider = eks.KubectlProvider.from_kubectl_provider_attributes(
        ref,
        "Provider",
        service_token="arn:aws:lambda:us-west-2:111122223333:function:kubectl",
        role=iam.Role.from_role_arn(ref, "Role", "arn:aws:iam::111122223333:role/kubectl"),
    )
    cluster = eks.Cluster.from_cluster_attributes(
        ref, "Cluster", cluster_name="c", kubectl_provider=provider
    )
    stack = KvCacheStack(app, "KvCache", config=config, cluster=cluster)
    (chart,) = Template.from_stack(stack).find_resources("Custom::AWSCDK-EKS-HelmChart").values()
    values: Obj = json.loads(chart["Properties"].get("Values") or "{}")
    assert chart["Properties"]["Release"] == RELEASE
    return values


@pytest.fixture(scope="module")
def stack_values() -> dict[str, Obj]:
    return {env: _stack_values(env_config(env)) for env in ("dev", "prod")}


def _system_node(config: AppConfig) -> dict[str, str]:
    """The labels of a system node: its configured ones, and the instance group's name, which
    HyperPod sets itself; plus the OS label the chart's default nodeSelector asks for."""
    group = config.hyperpod.system_group
    return {**group.labels, INSTANCE_GROUP_LABEL: group.name, "kubernetes.io/os": "linux"}


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_kyverno_admission_keeps_serving_through_a_system_node_drain_where_two_exist(
    stack_values: dict[str, Obj], env: str
) -> None:
    """With two or more system nodes (prod), the admission controller runs two replicas that
    cannot share a node and a budget keeps one of them serving through a drain; with one (dev),
    one replica and no budget, which would block the node's drain. Each object validates
    against the cluster's OpenAPI schema."""
    config = env_config(env)
    values = stack_values[env]
    assert unknown_keys(values, CHART_VALUES) == []
    deployment, pdb = admission_objects(values, RELEASE, config.kvcache.kyverno.namespace)
    version = SUPPORTED_KUBERNETES[config.eks.kubernetes_version].schema_version
    for obj in (deployment, pdb):
        if obj is not None:
            kubernetes_validate.validate(obj, version, strict=True)
    nodes = config.hyperpod.system_group.instance_count
    template = deployment["spec"]["template"]
    assert selects({"matchLabels": template["spec"]["nodeSelector"]}, _system_node(config))
    replicas = deployment["spec"].get("replicas", 1)  # the Deployment's default when unset
    if nodes < 2:
        assert replicas == 1 and pdb is None
        return
    assert replicas == 2
    (term,) = template["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert selects(term["labelSelector"], template["metadata"]["labels"])
    # An update replaces one replica at a time: a surge Pod would find no free node.
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"] == 0
    assert pdb is not None and pdb["spec"]["minAvailable"] == 1
    assert selects(pdb["spec"]["selector"], template["metadata"]["labels"])


def test_the_chart_model_refuses_a_misspelt_value() -> None:
    """``unknown_keys`` sees what Helm would silently keep and no template read."""
    assert unknown_keys({"admissionController": {"replica": 2}}, CHART_VALUES) == [
        "admissionController.replica"
    ]
    assert unknown_keys({"admissionController": {"nodeSelector": {"any": "x"}}}, CHART_VALUES) == []
    _, pdb = admission_objects({"admissionController": {"replicas": 2}}, RELEASE, "kyverno")
    assert pdb is not None and pdb["spec"]["minAvailable"] == 1  # the chart's own rule


@pytest.mark.parametrize("env", ["dev", "prod"])
def test_kubectl_users_install_kyverno_with_the_values_the_stack_deploys(
    stack_values: dict[str, Obj], env: str, tmp_path: Path
) -> None:
    """`make manifests` writes the release's values beside the charts and its `helm install`
    step passes them: a cluster set up with kubectl gets the same replicas, budget and node
    placement as one deployed by CDK."""

    out = tmp_path / env
    files = render(env, out, lock_dir=tmp_path / "locks")
    assert yaml.safe_load((out / KYVERNO_VALUES).read_text()) == stack_values[env]
    helm = next(
        line
        for line in kubectl_steps(env_config(env), [f.name for f in files], str(out)).split("\n  ")
        if "--values" in line
    )
    assert f"--values {out}/{KYVERNO_VALUES}" in helm


def _outcome(expression: str, p: Obj, emulated: bool) -> bool | str:
    request = {"namespace": p["metadata"]["namespace"], "operation": "CREATE"}
    try:
        if emulated:
            return cel(expression, request, p)
        value = cel_engine.evaluate(expression, object=p, oldObject=None, request=request)
        assert isinstance(value, bool), value
        return value
    except (CelError, cel_engine.CelEvalError):
        return "error"


@pytest.mark.parametrize("env", ENVS)
def test_the_match_condition_emulator_agrees_with_cel_cpp(
    rendered_envs: dict[str, list[Obj]], env: str
) -> None:
    """The rendered webhook's matchConditions, on every Pod the tests above send through it
    and each endpoint's own: the double's verdict is that of Google's CEL implementation
    (cel-cpp), and both verdicts occur."""
    objs, config = rendered_envs[env], env_config(env)
    policy = next((o for o in objs if o["kind"] == "ClusterPolicy"), None)
    if policy is None:
        pytest.skip(f"{env} renders no L2 policy: no matchConditions to evaluate")
    names = {e.name for e in config.kvcache.endpoints}
    namespaces = {e.namespace for e in config.kvcache.endpoints}
    pods = [p for _, p in rendered_pods(objs)]
    pods += [pod(ns, {"app": n}) for ns in (*OTHER_NAMESPACES, *namespaces) for n in names]
    pods += [pod(ns) for ns in (*OTHER_NAMESPACES, *namespaces)]
    pods += [pod(ns, {"app": "other"}) for ns in namespaces]
    seen: set[bool | str] = set()
    for condition in policy["spec"]["webhookConfiguration"]["matchConditions"]:
        for p in pods:
            real = _outcome(condition["expression"], p, emulated=False)
            assert _outcome(condition["expression"], p, emulated=True) == real, (condition, p)
            seen.add(real)
    assert seen >= {True, False}
