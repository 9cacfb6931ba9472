"""The rendered Kyverno policy applied to a fixture of the operator's Pod.

Double: ``kyverno_eval`` (a small evaluator of patchStrategicMerge and rule matching, see its
docstring) stands in for Kyverno, because the kyverno CLI is not installable from a package
registry here. The policy under test is the real rendered one.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from k8s.names import curvine_claim
from k8s.policy import RULE_NAME_MAX, rule_name
from tests.doubles.kyverno_eval import apply_policy
from tests.support.objects import OPERATOR_POD

# The seed walkthrough's URL, spelled out so a change in the code cannot also change the check.
L2_URL = "fs://localhost:0/mnt/curvine/l2cache/"


@pytest.fixture(scope="module")
def policy(rendered: list[dict[str, Any]]) -> dict[str, Any]:
    return next(o for o in rendered if o["kind"] == "ClusterPolicy")


def _env(c: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in c.get("env", [])}


def test_policy_shape(policy: dict[str, Any], dev_config: AppConfig) -> None:
    # Mutating at admission is the whole policy (admission false: no Pod would get L2); a Pod
    # create fails rather than start without L2 (Fail), and Kyverno gets 15 s to answer, within
    # the API server's 30 s cap for a webhook; no background scans of existing Pods.
    assert policy["spec"]["admission"] is True
    webhook = policy["spec"]["webhookConfiguration"]
    assert {k: webhook[k] for k in ("failurePolicy", "timeoutSeconds")} == {
        "failurePolicy": "Fail",
        "timeoutSeconds": 15,
    }
    # The API server calls Kyverno only for the endpoints' Pods (test_rehearsal_kyverno.py):
    # at most 64 conditions per webhook, each named as Kubernetes requires.
    conditions = webhook["matchConditions"]
    assert 0 < len(conditions) <= 64
    for c in conditions:
        assert re.fullmatch(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", c["name"]), c
    assert policy["spec"]["background"] is False
    rules = policy["spec"]["rules"]
    assert len(rules) == len(dev_config.kvcache.endpoints)
    for r in rules:
        (m,) = r["match"]["any"]
        assert m["resources"]["kinds"] == ["Pod"] and m["resources"]["operations"] == ["CREATE"]


def _model(pod: dict[str, Any]) -> dict[str, Any]:
    (c,) = [c for c in pod["spec"]["containers"] if "LMCACHE_REMOTE_URL" in _env(c)]
    return c


def _renamed(name: str, first: bool) -> dict[str, Any]:
    """The fixture with the model container renamed and moved (operator versions differ)."""
    pod = copy.deepcopy(OPERATOR_POD)
    containers = pod["spec"]["containers"]
    model = containers.pop(0)
    model["name"] = name
    containers.insert(0 if first else len(containers), model)
    return pod


@pytest.mark.parametrize(
    ("name", "first"), [("inference", True), ("qwen3-8b", False), ("vllm", False)]
)
def test_mutation_repoints_l2_and_mounts_the_pvc(
    policy: dict[str, Any], name: str, first: bool, dev_config: AppConfig
) -> None:
    before_pod = _renamed(name, first)
    pod = apply_policy(policy, before_pod, "CREATE")
    before = {c["name"]: c for c in before_pod["spec"]["containers"]}
    after = {c["name"]: c for c in pod["spec"]["containers"]}
    assert list(after) == list(before)
    vllm = after[name]
    # L1: dev's 64 GiB Pod less vLLM's 8 GiB and 2 GiB for its one GPU. The multiprocess
    # directory comes with the endpoint's own env, which the operator passes on (not LMCACHE_*).
    want = {
        **_env(before[name]),
        "LMCACHE_REMOTE_URL": L2_URL,
        "LMCACHE_REMOTE_SERDE": "naive",
        "PYTHONHASHSEED": "0",
        "LMCACHE_MAX_LOCAL_CPU_SIZE": "54",
    }
    assert _env(vllm) == want
    assert [e["name"] for e in vllm["env"]].count("LMCACHE_REMOTE_URL") == 1
    assert vllm["volumeMounts"] == [
        *before[name]["volumeMounts"],
        {"name": "curvine-l2", "mountPath": "/mnt/curvine/l2cache", "subPath": "qwen3-8b"},
    ]
    assert pod["spec"]["volumes"] == [
        *before_pod["spec"]["volumes"],
        {"name": "curvine-l2", "persistentVolumeClaim": {"claimName": curvine_claim(dev_config)}},
    ]
    for other in ("reverse-proxy", "otel-collector"):
        assert after[other] == before[other]
    assert pod["spec"]["initContainers"] == before_pod["spec"]["initContainers"]
    assert {k: v for k, v in vllm.items() if k not in ("env", "volumeMounts")} == {
        k: v for k, v in before[name].items() if k not in ("env", "volumeMounts")
    }


def test_no_container_carries_the_url_means_no_change(policy: dict[str, Any]) -> None:
    """Without enableL2Cache the operator injects no LMCACHE_REMOTE_URL: nothing to repoint."""
    pod = copy.deepcopy(OPERATOR_POD)
    model = _model(pod)
    model["env"] = [e for e in model["env"] if e["name"] != "LMCACHE_REMOTE_URL"]
    assert apply_policy(policy, pod, "CREATE") == pod


def test_policy_targets_no_container_by_name(policy: dict[str, Any]) -> None:
    """The rule must not name a container (the operator does not document the name)."""
    for r in policy["spec"]["rules"]:
        (loop,) = r["mutate"]["foreach"]
        assert loop["list"] == "request.object.spec.containers"
        (c,) = loop["patchStrategicMerge"]["spec"]["containers"]
        assert c["name"] == "{{ element.name }}" and "(name)" not in c
    annotations = policy["metadata"]["annotations"]
    assert annotations["pod-policies.kyverno.io/autogen-controllers"] == "none"


@pytest.mark.parametrize("change", ["update", "other-namespace", "other-endpoint"])
def test_mutation_leaves_other_requests_alone(policy: dict[str, Any], change: str) -> None:
    pod = copy.deepcopy(OPERATOR_POD)
    op = "UPDATE" if change == "update" else "CREATE"
    if change == "other-namespace":
        pod["metadata"]["namespace"] = "default"
    if change == "other-endpoint":
        pod["metadata"]["labels"]["app"] = "another-model"
    assert apply_policy(policy, pod, op) == pod


def test_rule_names_fit_kyverno_and_stay_unique_when_cut() -> None:
    """Kyverno's CRD caps a rule name at 63 characters and its webhook refuses a policy whose
    rule names repeat: two long endpoint names sharing a prefix must still make two rules."""

    assert rule_name(EndpointConfig(name="qwen3-8b", namespace="inference")) == (
        "l2-inference-qwen3-8b"
    )
    fits = EndpointConfig(name="m" * (RULE_NAME_MAX - len("l2-inference-")), namespace="inference")
    assert rule_name(fits) == f"l2-inference-{fits.name}"  # exactly 63: kept whole
    long = [EndpointConfig(name="m" * 62 + tail, namespace="inference") for tail in "ab"]
    names = [rule_name(e) for e in long]
    assert len(set(names)) == 2
    for name in names:
        assert len(name) == RULE_NAME_MAX
        assert name.startswith("l2-inference-mmm")
        assert re.fullmatch(r"[a-z0-9-]+-[0-9a-f]{8}", name)
    one_over = EndpointConfig(name="m" * (len(fits.name) + 1), namespace="inference")
    assert len(rule_name(one_over)) == RULE_NAME_MAX and rule_name(one_over) != rule_name(fits)


# Operator 3.2 (add-on v1.3.0-eksbuild.1) renders the model container without the LMCACHE_*
# entries of worker.environmentVariables and with its own LMCACHE_EXTRA_CONFIG for the
# sagemaker-hyperpod connector (a user report on aws/sagemaker-hyperpod-cli's GitHub issues,
# "Inference Operator v3.2.0 ignores l2CacheBackend: redis"). Everything L2 needs must then come
# from the admission rule alone.
EXTRA_CONFIG_3_2 = '{"sagemaker_hyperpod_shared_memory_name": "ai_toolkit_cache"}'


def operator_3_2_pod(iec: dict[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fixture Pod as operator 3.2 renders it for ``iec``: the endpoint's own LMCACHE_*
    variables gone (and any named in ``drop``), LMCACHE_EXTRA_CONFIG added."""
    own = {e["name"] for e in iec["spec"]["worker"]["environmentVariables"]}
    stripped = {n for n in own if n.startswith("LMCACHE_")} | set(drop)
    pod = copy.deepcopy(OPERATOR_POD)
    model = _model(pod)
    model["env"] = [e for e in model["env"] if e["name"] not in stripped]
    model["env"].append({"name": "LMCACHE_EXTRA_CONFIG", "value": EXTRA_CONFIG_3_2})
    return pod


@pytest.mark.parametrize("drop", [(), ("PYTHONHASHSEED",)], ids=["as-reported", "no-hashseed"])
def test_operator_3_2_pod_still_gets_everything_l2_needs(
    policy: dict[str, Any],
    rendered: list[dict[str, Any]],
    drop: tuple[str, ...],
    dev_config: AppConfig,
) -> None:
    iec = next(o for o in rendered if o["kind"] == "InferenceEndpointConfig")
    assert "LMCACHE_REMOTE_SERDE" in {
        e["name"] for e in iec["spec"]["worker"]["environmentVariables"]
    }
    before = operator_3_2_pod(iec, drop)
    assert "LMCACHE_REMOTE_SERDE" not in _env(_model(before))
    pod = apply_policy(policy, before, "CREATE")
    env = _env(_model(pod))
    # What the design lists for L2 on Curvine, spelled out.
    assert env["LMCACHE_REMOTE_URL"] == L2_URL
    assert env["LMCACHE_REMOTE_SERDE"] == "naive"
    assert env["PYTHONHASHSEED"] == "0"
    assert env["LMCACHE_EXTRA_CONFIG"] == EXTRA_CONFIG_3_2  # read by sagemaker-hyperpod only
    assert not [v for v in env.values() if str(v).startswith("sagemaker-hyperpod://")]
    assert {"name": "curvine-l2", "mountPath": "/mnt/curvine/l2cache", "subPath": "qwen3-8b"} in (
        _model(pod)["volumeMounts"]
    )
    pvc = curvine_claim(dev_config)
    claim = {"name": "curvine-l2", "persistentVolumeClaim": {"claimName": pvc}}
    assert claim in pod["spec"]["volumes"]
