"""Whether the endpoint's Pods carry what the L2 rule gives them: the URL in every container that
carries it (the last entry of a repeated name), the mount with the endpoint's subPath, whatever the
model container is called.

Doubles: botocore's Stubber for SageMaker DescribeCluster and the EKS add-ons, FakeKube for the
cluster, two local OpenAI-compatible servers (FakeVllm) for the cross-Pod test
(tests/support/verify.py)."""

from __future__ import annotations

import copy
from typing import Any

from k8s.names import curvine_claim
from k8s.policy import rule
from scripts.lib.verify.run import run_verify
from tests.doubles.fake_kube import FakeKube
from tests.doubles.kyverno_eval import apply_policy
from tests.support.endpoint_objects import PODS
from tests.support.verify import CFG, REF, _clients, _seed_cluster, _stubbed_aws


def test_a_renamed_model_container_is_still_checked(kube: FakeKube) -> None:
    """The container is found by LMCACHE_REMOTE_URL, as the policy finds it, not by name."""
    _seed_cluster(kube)
    for key, obj in kube.objects.items():
        if key.startswith(PODS + "/"):
            model = next(c for c in obj["spec"]["containers"] if c["name"] == REF.name)
            model["name"] = "inference"
            obj["spec"]["containers"].reverse()
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, REF, None)
    by_stage = {c.stage: c for c in checks}
    assert by_stage["LMCACHE_REMOTE_URL is Curvine"].status == "pass"
    assert by_stage["Pods carry L2 settings"].status == "pass"


def test_a_mount_without_the_endpoint_subpath_fails(kube: FakeKube) -> None:
    # An older manual patch mounted the whole PVC: the policy mounts subPath <endpoint name>.
    _seed_cluster(kube)
    for key, obj in kube.objects.items():
        if key.startswith(PODS + "/"):
            model = next(c for c in obj["spec"]["containers"] if c["name"] == REF.name)
            for m in model["volumeMounts"]:
                m.pop("subPath", None)
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, REF, None)
    pods = {c.stage: c for c in checks}["Pods carry L2 settings"]
    assert pods.status == "fail" and "mount at /mnt/curvine/l2cache is" in pods.detail
    assert "'subPath': 'vllm-kvcache'" in pods.detail


OPERATOR_URL = "sagemaker-hyperpod://$(NODE_IP):9200"
EXTRA_CONFIG_3_2 = '{"sagemaker_hyperpod_shared_memory_name": "ai_toolkit_cache"}'


def _pods(kube: FakeKube) -> list[dict[str, Any]]:
    """The endpoint's Pods (the seeded cluster also holds Curvine's)."""
    return [
        obj
        for key, obj in kube.objects.items()
        if "/pods/" in key and obj["metadata"]["namespace"] == REF.namespace
    ]


def _model(pod: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in pod["spec"]["containers"] if c["name"] == REF.name)


def _verify_rows(kube: FakeKube) -> dict[str, Any]:
    checks, _ = run_verify(_clients(kube, _stubbed_aws()), CFG, REF, None)
    return {c.stage: c for c in checks}


def test_a_repeated_remote_url_whose_last_entry_is_the_operators_fails(kube: FakeKube) -> None:
    """The kubelet keeps the last of two entries with one name: the process runs with the
    operator's URL even though the first entry is Curvine's."""
    _seed_cluster(kube)
    for pod in _pods(kube):
        _model(pod)["env"].append({"name": "LMCACHE_REMOTE_URL", "value": OPERATOR_URL})
    url = _verify_rows(kube)["LMCACHE_REMOTE_URL is Curvine"]
    assert url.status == "fail"
    for pod in ("vllm-kvcache-7d9f-1", "vllm-kvcache-7d9f-2"):
        assert f"Pod {pod}: LMCACHE_REMOTE_URL={OPERATOR_URL}" in url.detail


def test_an_earlier_entry_naming_the_operators_connector_fails_too(kube: FakeKube) -> None:
    _seed_cluster(kube)
    for pod in _pods(kube):
        _model(pod)["env"].insert(0, {"name": "LMCACHE_REMOTE_URL", "value": OPERATOR_URL})
    url = _verify_rows(kube)["LMCACHE_REMOTE_URL is Curvine"]
    assert url.status == "fail" and OPERATOR_URL in url.detail


def test_every_container_carrying_the_url_is_checked(kube: FakeKube) -> None:
    """The rule patches each container that carries LMCACHE_REMOTE_URL; one left on the
    operator's connector fails even when the first is right."""
    _seed_cluster(kube)
    for pod in _pods(kube):
        second = copy.deepcopy(_model(pod))
        second["name"] = "second-model"
        second["env"] = [{"name": "LMCACHE_REMOTE_URL", "value": OPERATOR_URL}]
        second["volumeMounts"] = []
        pod["spec"]["containers"].append(second)
    rows = _verify_rows(kube)
    url, settings = rows["LMCACHE_REMOTE_URL is Curvine"], rows["Pods carry L2 settings"]
    assert (
        url.status == "fail"
        and f"container second-model: LMCACHE_REMOTE_URL={OPERATOR_URL}" in (url.detail)
    )
    assert settings.status == "fail" and "second-model: LMCACHE_REMOTE_SERDE absent" in (
        settings.detail
    )


def _as_operator_3_2_renders(kube: FakeKube) -> None:
    """The recorded Pods as operator 3.2 renders them: its URL and LMCACHE_EXTRA_CONFIG in the
    model container, none of the endpoint's own LMCACHE_* variables, no PYTHONHASHSEED."""
    _seed_cluster(kube, patched=False)
    for pod in _pods(kube):
        env = _model(pod)["env"]
        assert not [e for e in env if e["name"] in ("LMCACHE_REMOTE_SERDE", "PYTHONHASHSEED")]
        env.append({"name": "LMCACHE_EXTRA_CONFIG", "value": EXTRA_CONFIG_3_2})


def test_operator_3_2_pods_that_the_rule_missed_fail_naming_what_they_lack(
    kube: FakeKube,
) -> None:
    _as_operator_3_2_renders(kube)
    rows = _verify_rows(kube)
    url, settings = rows["LMCACHE_REMOTE_URL is Curvine"], rows["Pods carry L2 settings"]
    assert url.status == "fail" and f"LMCACHE_REMOTE_URL={OPERATOR_URL}" in url.detail
    assert settings.status == "fail"
    for missing in (
        "LMCACHE_REMOTE_SERDE absent",
        "PYTHONHASHSEED absent",
        "no mount at /mnt/curvine/l2cache",
        "no volume",
    ):
        assert missing in settings.detail, settings.detail


def test_operator_3_2_pods_admitted_through_the_rule_pass(kube: FakeKube) -> None:
    """The same Pods after the rendered Kyverno rule (tests/doubles/kyverno_eval.py) mutated them at
    admission: verify finds everything L2 needs."""
    _as_operator_3_2_renders(kube)
    policy = {"spec": {"rules": [rule(CFG, REF, curvine_claim(CFG))]}}
    for key, pod in list(kube.objects.items()):
        if "/pods/" in key:
            admitted = apply_policy(policy, {"kind": "Pod", **pod}, "CREATE")
            kube.objects[key] = {k: v for k, v in admitted.items() if k != "kind"}
    rows = _verify_rows(kube)
    assert rows["LMCACHE_REMOTE_URL is Curvine"].status == "pass", rows
    assert rows["Pods carry L2 settings"].status == "pass", rows
