"""The Kubernetes layer on an existing cluster: every chart is a Custom::HyperPodOwnedManifest,
and the synthesized properties, run through the handler against a cluster that already has
``inference``/``kyverno`` namespaces, an ``ebs-sc`` and Kyverno, change and delete nothing the
owner had.

Doubles: the real synthesized templates (the shared ``dev``/``existing`` fixtures plus one
variant: private endpoint, every add-on skipped, Kyverno and ebs-sc reused, the endpoint in a
namespace of its own); a local fake Kubernetes API server driven by the official client
(tests/doubles/ownership_fake_kube.py) stands in for the cluster.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from infra.config import parse_config
from infra.custom_resources.owned_manifest.construct import RESOURCE_TYPE
from infra.custom_resources.owned_manifest.handler import index
from infra.custom_resources.owned_manifest.handler.cluster import Cluster
from infra.custom_resources.owned_manifest.handler.kinds import Ref
from infra.custom_resources.owned_manifest.handler.ownership import (
    OWNER_ANNOTATION,
    OwnershipError,
    stamped,
)
from tests.doubles.ownership_fake_kube import ApplyFakeKube, Provisioner
from tests.support.config import (
    QUICK_INSTALL_CLUSTER,
    QUICK_INSTALL_PRIVATE,
    env_raw,
    use_existing_cluster,
)
from tests.support.kube_discovery import discovery
from tests.support.owned_manifest import CRD, NS, SC, FakeTime, ns, sc
from tests.support.synth import Synth, synth

KUBECTL_RESOURCE = "Custom::AWSCDK-EKS-KubernetesResource"


def reuse_raw() -> dict[str, Any]:
    raw = env_raw()
    use_existing_cluster(raw, {**QUICK_INSTALL_CLUSTER, **QUICK_INSTALL_PRIVATE})
    raw["addons"] = {
        k: {"mode": "skip"}
        for k in ("cert_manager", "s3_csi", "fsx_csi", "metrics_server", "inference_operator")
    }
    kv = raw.setdefault("kvcache", {})
    kv["kyverno"] = {**kv.get("kyverno", {}), "install": False}
    curvine = kv.setdefault("curvine", {})
    curvine["master"] = {**curvine.get("master", {}), "storage_class": "ebs-sc"}
    kv["endpoints"] = [{**e, "namespace": "llm"} for e in kv.get("endpoints", [{}])]
    return raw


@pytest.fixture(scope="module")
def reuse(tmp_path_factory: pytest.TempPathFactory) -> Synth:
    config = parse_config(reuse_raw(), "config/dev.yaml (existing, reuse Kyverno, ebs-sc)", "dev")
    return synth(config, tmp_path_factory.mktemp("existing-reuse"), chart_dir=None)


def applies(s: Synth) -> list[tuple[str, dict[str, Any]]]:
    """(logical id, properties) of every owned manifest, in dependency (apply) order."""
    resources = s.template_json("kvcache")["Resources"]
    owned = {k: v for k, v in resources.items() if v["Type"] == RESOURCE_TYPE}
    ordered: list[str] = []
    while len(ordered) < len(owned):
        for k, v in owned.items():
            deps = [d for d in v.get("DependsOn", []) if d in owned]
            if k not in ordered and all(d in ordered for d in deps):
                ordered.append(k)
    return [(k, owned[k]["Properties"]) for k in ordered]


@pytest.fixture
def owners_cluster() -> Iterator[ApplyFakeKube]:
    """The owner's cluster: namespaces inference and kyverno, StorageClass ebs-sc, Kyverno."""
    with ApplyFakeKube() as kube:
        kube.put(NS, ns("inference", team="ml"))
        kube.put(NS, ns("kyverno", team="platform"))
        kube.put(SC, sc("ebs-sc", type="gp2"))
        kube.put(
            CRD,
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": "clusterpolicies.kyverno.io"},
            },
        )
        yield kube


def _event(kind: str, logical_id: str, props: dict[str, Any]) -> dict[str, Any]:
    e = {"RequestType": kind, "LogicalResourceId": logical_id, "ResourceProperties": props}
    if kind == "Delete":
        e["PhysicalResourceId"] = f"owned-manifest:{props['Owner']}:{logical_id}"
    return e


def test_created_mode_still_applies_with_the_kubectl_provider(dev: Synth) -> None:
    assert dev.resources("kvcache", RESOURCE_TYPE) == {}
    assert len(dev.resources("kvcache", KUBECTL_RESOURCE)) == len(dev.stacks.kvcache.manifests)
    assert dev.stacks.kvcache.kyverno is not None


def test_existing_mode_applies_every_chart_with_the_ownership_check(existing: Synth) -> None:
    assert existing.resources("kvcache", KUBECTL_RESOURCE) == {}
    ordered = applies(existing)
    assert len(ordered) == len(existing.stacks.kvcache.manifests)
    owner = existing.config.stack_prefix
    assert {p["Owner"] for _, p in ordered} == {owner}
    first = ordered[0][1]
    every = [o for _, p in ordered for o in json.loads(p["Manifest"])]
    # The endpoints (their own stack, applied last) go through the same ownership check, and
    # the first apply's preflight already covers them.
    endpoints = existing.resources("endpoints", RESOURCE_TYPE)
    assert existing.resources("endpoints", KUBECTL_RESOURCE) == {} and len(endpoints) == 1
    (apply,) = endpoints.values()
    assert apply["Properties"]["Owner"] == owner
    every += json.loads(apply["Properties"]["Manifest"])
    assert len(json.loads(first["Preflight"])) == len(every)
    assert [c["name"] for c in json.loads(first["Absent"])] == ["clusterpolicies.kyverno.io"]
    assert all(p["Preflight"] == "[]" for _, p in ordered[1:])


@pytest.mark.parametrize("layer", ["existing", "reuse"])
def test_every_object_and_check_is_at_the_path_the_api_serves_it_at(
    layer: str, request: pytest.FixtureRequest
) -> None:
    """Each object the handler applies, each later object it checks up front and each object
    that must or must not exist: its URL path from the handler's table is the one the API
    server's discovery data (Kubernetes of the pinned minor, the vendored CRDs) gives for its
    apiVersion and kind, namespaced or cluster-scoped."""
    s: Synth = request.getfixturevalue(layer)
    api = discovery()
    props = [p for _, p in applies(s)]
    props += [r["Properties"] for r in s.resources("endpoints", RESOURCE_TYPE).values()]
    objects = [o for p in props for key in ("Manifest", "Preflight") for o in json.loads(p[key])]
    checks = [c for p in props for key in ("Present", "Absent") for c in json.loads(p[key])]
    objects += [
        {
            "apiVersion": c["apiVersion"],
            "kind": c["kind"],
            "metadata": {"name": c["name"], "namespace": c.get("namespace")},
        }
        for c in checks
    ]
    assert checks and {o["kind"] for o in objects} >= {
        "Namespace",
        "ClusterPolicy",
        "InferenceEndpointConfig",
    }
    for obj in objects:
        meta = obj["metadata"]
        served = api.get((obj["apiVersion"], obj["kind"]))
        assert served is not None, f"{obj['apiVersion']} {obj['kind']}: not served"
        want = served.path(meta["name"], meta.get("namespace") or "default")
        assert Ref.of(obj).path == want, (obj["kind"], meta["name"])


def test_the_handler_runs_as_the_kubectl_role(existing: Synth) -> None:
    functions = existing.resources("kvcache", "AWS::Lambda::Function")
    handler = next(f for k, f in functions.items() if k.startswith("OwnedManifestsOnEvent"))
    kubectl_role_arn = existing.config.existing_cluster.kubectl_role_arn  # type: ignore[union-attr]
    assert handler["Properties"]["Role"] == kubectl_role_arn
    assert handler["Properties"]["Handler"] == "owned_manifest.index.on_event"


def test_private_endpoint_puts_the_handler_in_the_kubectl_subnets(reuse: Synth) -> None:
    functions = reuse.resources("kvcache", "AWS::Lambda::Function")
    assert len(functions) == 2  # the handler and the Provider framework's onEvent
    for f in functions.values():
        assert f["Properties"]["VpcConfig"] == {
            "SubnetIds": QUICK_INSTALL_PRIVATE["kubectl_subnet_ids"],
            "SecurityGroupIds": [QUICK_INSTALL_PRIVATE["kubectl_security_group_id"]],
        }


def test_reuse_installs_no_kyverno_and_creates_no_ebs_sc(reuse: Synth) -> None:
    assert reuse.stacks.kvcache.kyverno is None
    assert reuse.resources("kvcache", "Custom::AWSCDK-EKS-HelmChart") == {}
    objects = [o for _, p in applies(reuse) for o in json.loads(p["Manifest"])]
    names = {(o["kind"], o["metadata"]["name"]) for o in objects}
    assert ("StorageClass", "ebs-sc") not in names
    assert ("Namespace", "kyverno") not in names and ("Namespace", "inference") not in names
    claims = [
        t
        for o in objects
        if o["kind"] == "StatefulSet"
        for t in o["spec"].get("volumeClaimTemplates", [])
    ]
    assert claims and {t["spec"]["storageClassName"] for t in claims} == {"ebs-sc"}


def test_the_default_layer_is_refused_on_the_owners_cluster_before_any_change(
    existing: Synth, owners_cluster: ApplyFakeKube
) -> None:
    before = json.loads(json.dumps(owners_cluster.objects))
    cluster = Cluster(owners_cluster.api_client())
    logical_id, props = applies(existing)[0]
    with pytest.raises(OwnershipError) as err:
        index.on_event(_event("Create", logical_id, props), None, cluster=cluster)
    assert "\n" not in str(err.value)
    assert "kvcache.kyverno.install to false" in str(err.value)
    assert owners_cluster.writes() == [] and owners_cluster.objects == before


def test_the_default_layer_without_kyverno_names_the_namespace_fix(
    existing: Synth, owners_cluster: ApplyFakeKube
) -> None:
    """With the Kyverno CRD gone, the next refusal is the first object that is not ours."""
    del owners_cluster.objects[f"{CRD}/clusterpolicies.kyverno.io"]
    cluster = Cluster(owners_cluster.api_client())
    logical_id, props = applies(existing)[0]
    with pytest.raises(OwnershipError, match=r"^Namespace inference exists and is not ours"):
        index.on_event(_event("Create", logical_id, props), None, cluster=cluster)
    assert owners_cluster.writes() == []


def test_reusing_deploys_and_destroys_without_touching_the_owners_objects(
    reuse: Synth, owners_cluster: ApplyFakeKube
) -> None:
    before = json.loads(json.dumps(owners_cluster.objects))
    cluster = Cluster(owners_cluster.api_client())
    ordered = applies(reuse)
    for logical_id, props in ordered:
        index.on_event(_event("Create", logical_id, props), None, cluster=cluster)
    ours = {k: v for k, v in owners_cluster.objects.items() if k not in before}
    assert ours and all(
        v["metadata"]["annotations"][OWNER_ANNOTATION] == reuse.config.stack_prefix
        for v in ours.values()
    )
    assert {k: owners_cluster.objects[k] for k in before} == before
    touched = {p for m, p, _ in owners_cluster.writes()}
    assert not touched & set(before)
    for logical_id, props in reversed(ordered):
        index.on_event(_event("Delete", logical_id, props), None, cluster=cluster)
    assert owners_cluster.objects == before


def _prods_layer(kube: ApplyFakeKube, s: Synth) -> dict[str, Any]:
    """prod's copy of every object of this layer (same names), marked by prod; a copy of the
    store."""

    prod = s.config.stack_prefix.replace(s.config.environment, "prod")
    assert prod != s.config.stack_prefix
    for _, props in applies(s):
        for obj in json.loads(props["Manifest"]):
            kube.put(Ref.of(obj).collection, stamped(obj, prod))
    return json.loads(json.dumps(kube.objects))


def test_destroy_leaves_every_same_named_object_another_environment_marked(
    existing: Synth,
) -> None:
    """dev's destroy on the cluster it shares with prod, where prod's objects carry the same
    names (namespaces, the L2 claim, the L2 policy, Curvine): nothing of prod's is deleted."""
    with ApplyFakeKube() as kube:
        before = _prods_layer(kube, existing)
        cluster = Cluster(kube.api_client())
        for logical_id, props in reversed(applies(existing)):
            index.on_event(_event("Delete", logical_id, props), None, cluster=cluster)
        assert kube.writes() == [] and kube.objects == before


def test_a_prune_leaves_every_same_named_object_another_environment_marked(
    existing: Synth,
) -> None:
    """An update of each of dev's applies to an empty manifest prunes all it had: prod's
    objects of the same names stay."""
    with ApplyFakeKube() as kube:
        before = _prods_layer(kube, existing)
        cluster = Cluster(kube.api_client())
        for logical_id, props in reversed(applies(existing)):
            e = _event("Update", logical_id, {**props, "Manifest": "[]", "Preflight": "[]"})
            e.update(PhysicalResourceId="p", OldResourceProperties=props)
            index.on_event(e, None, cluster=cluster)
        assert kube.writes() == [] and kube.objects == before


def deletion_waves(resources: dict[str, Any]) -> list[list[str]]:
    """The owned manifests in CloudFormation's delete order: a resource once every resource
    that depends on it is gone; the resources of one wave side by side, in any order."""
    owned = {
        k: set(v.get("DependsOn", [])) for k, v in resources.items() if v["Type"] == RESOURCE_TYPE
    }
    waves: list[list[str]] = []
    gone: set[str] = set()
    while len(gone) < len(owned):
        wave = sorted(
            k
            for k in owned
            if k not in gone and all(j in gone for j, deps in owned.items() if k in deps)
        )
        waves.append(wave)
        gone |= set(wave)
    return waves


def test_destroy_deletes_the_l2_volumes_while_their_provisioner_runs(existing: Synth) -> None:
    """Deploy the layer, then destroy it in the order the synthesized DependsOn graph allows,
    the claims last within their wave (CloudFormation promises no order inside one): every
    volume of the L2 claims is deleted by the Curvine CSI controller, which (with Curvine's
    master) still runs. Gone first, it would leave each volume with its finalizer."""

    curvine = f"/apis/apps/v1/namespaces/{existing.config.kvcache.curvine.namespace}"
    needed = (
        f"{curvine}/deployments/curvine-csi-controller",
        f"{curvine}/statefulsets/curvine-master",
    )
    with ApplyFakeKube() as kube:
        provisioner = Provisioner(kube, running=lambda k: all(p in k.objects for p in needed))
        cluster = Cluster(kube.api_client())
        props = dict(applies(existing))
        for logical_id, p in props.items():
            index.on_event(_event("Create", logical_id, p), None, cluster=cluster)
        assert provisioner.volumes() and all(p in kube.objects for p in needed)
        for wave in deletion_waves(existing.template_json("kvcache")["Resources"]):
            for logical_id in sorted(wave, key=lambda k: "K8s40l2volume" in k):
                e = _event("Delete", logical_id, props[logical_id])
                index.on_event(e, None, cluster=cluster, wait=FakeTime().wait())
        assert provisioner.volumes() == {}
