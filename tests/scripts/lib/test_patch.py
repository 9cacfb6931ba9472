"""``patch``'s engine: the JSON Patch computed from a recorded operator-rendered Deployment, and the
pause/patch/restore sequence. Double: FakeKube (local in-memory API server) behind the official
kubernetes client, so paths, content types (JSON Patch vs merge patch) and bodies are real.
Kyverno is stood in for by tests/doubles/kyverno_eval.py (the kyverno CLI is not installable from a
package registry here), applying the real ``k8s.policy.rule`` to the same Pod template."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from k8s.names import curvine_claim
from k8s.policy import rule
from scripts.lib.errors import OperationError
from scripts.lib.patch import compute_patch, run_patch
from tests.doubles.fake_kube import FakeKube, json_patch
from tests.doubles.kyverno_eval import apply_policy
from tests.support.endpoint_objects import DEPLOYMENTS, OPERATOR
from tests.support.patch import CFG, REF, SETTINGS, _seed
from tests.support.progress import FakeClock, plain

URL = "fs://localhost:0/mnt/curvine/l2cache/"
MOUNT = {"name": "curvine-l2", "mountPath": "/mnt/curvine/l2cache", "subPath": "vllm-kvcache"}
VOLUME = {"name": "curvine-l2", "persistentVolumeClaim": {"claimName": curvine_claim(CFG)}}


def test_patch_targets_the_container_and_env_found_by_name(deployment: dict[str, Any]) -> None:
    ops = compute_patch(deployment, SETTINGS)
    # The model container is index 1 (a sidecar comes first); LMCACHE_REMOTE_URL is env index 4.
    assert {
        "op": "test",
        "path": "/spec/template/spec/containers/1/env/4/name",
        "value": "LMCACHE_REMOTE_URL",
    } in ops
    assert {
        "op": "replace",
        "path": "/spec/template/spec/containers/1/env/4",
        "value": {"name": "LMCACHE_REMOTE_URL", "value": URL},
    } in ops
    patched = json_patch(deployment, ops)
    model = patched["spec"]["template"]["spec"]["containers"][1]
    env = {e["name"]: e.get("value") for e in model["env"]}
    assert env["LMCACHE_REMOTE_URL"] == URL
    assert env["LMCACHE_REMOTE_SERDE"] == "naive" and env["PYTHONHASHSEED"] == "0"
    assert env["MODEL_PATH"] == "/opt/ml/model"  # untouched
    assert MOUNT in model["volumeMounts"]
    assert VOLUME in patched["spec"]["template"]["spec"]["volumes"]
    assert (
        patched["spec"]["template"]["spec"]["containers"][0]
        == deployment["spec"]["template"]["spec"]["containers"][0]
    )
    assert compute_patch(patched, SETTINGS) == []  # idempotent


def test_patch_follows_the_env_wherever_it_moves(deployment: dict[str, Any]) -> None:
    spec = deployment["spec"]["template"]["spec"]
    spec["containers"].reverse()  # model container now at index 0
    env = spec["containers"][0]["env"]
    env.insert(0, env.pop(4))  # LMCACHE_REMOTE_URL now first
    del spec["volumes"]
    ops = compute_patch(deployment, SETTINGS)
    assert {
        "op": "test",
        "path": "/spec/template/spec/containers/0/env/0/name",
        "value": "LMCACHE_REMOTE_URL",
    } in ops
    assert {
        "op": "add",
        "path": "/spec/template/spec/volumes",
        "value": [VOLUME],
    } in ops
    assert compute_patch(json_patch(deployment, ops), SETTINGS) == []


def _as_pod(deployment: dict[str, Any]) -> dict[str, Any]:
    """A Pod as the ReplicaSet creates it from the Deployment's template (what Kyverno sees)."""
    template = copy.deepcopy(deployment["spec"]["template"])
    meta = {**template["metadata"], "namespace": deployment["metadata"]["namespace"]}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"]}


def _stale(deployment: dict[str, Any]) -> None:
    """Earlier, different L2 settings: another serde, mount name and claim."""
    spec = deployment["spec"]["template"]["spec"]
    model = spec["containers"][1]
    model["env"].append({"name": "LMCACHE_REMOTE_SERDE", "value": "pickle"})
    model["volumeMounts"].append({"name": "old-l2", "mountPath": "/mnt/curvine/l2cache"})
    spec["volumes"].append({"name": "curvine-l2", "persistentVolumeClaim": {"claimName": "x"}})


def _moved(deployment: dict[str, Any]) -> None:
    spec = deployment["spec"]["template"]["spec"]
    spec["containers"].reverse()
    env = spec["containers"][0]["env"]
    env.insert(0, env.pop(4))
    del spec["volumes"]
    del spec["containers"][0]["volumeMounts"]


@pytest.mark.parametrize("change", ["recorded", "moved", "stale", "already-patched"])
def test_patch_gives_the_template_exactly_what_the_policy_gives_the_pod(
    deployment: dict[str, Any], change: str
) -> None:
    if change == "moved":
        _moved(deployment)
    if change == "stale":
        _stale(deployment)
    if change == "already-patched":
        deployment = json_patch(deployment, compute_patch(deployment, SETTINGS))
    # The rule k8s/policy.py renders.
    policy = {"spec": {"rules": [rule(CFG, REF, curvine_claim(CFG))]}}
    by_policy = apply_policy(policy, _as_pod(deployment), "CREATE")["spec"]
    by_patch = json_patch(deployment, compute_patch(deployment, SETTINGS))["spec"]["template"]
    by_patch = by_patch["spec"]

    def model(spec: dict[str, Any]) -> dict[str, Any]:
        return next(c for c in spec["containers"] if c["name"] == REF.name)

    # The rule matched (otherwise both sides could be unchanged and still equal).
    assert MOUNT in model(by_policy)["volumeMounts"] and VOLUME in by_policy["volumes"]
    assert model(by_patch)["env"] == model(by_policy)["env"]
    assert model(by_patch)["volumeMounts"] == model(by_policy)["volumeMounts"]
    assert by_patch["volumes"] == by_policy["volumes"]
    assert by_patch == by_policy  # and nothing else differs


def test_no_lmcache_container_is_an_error(deployment: dict[str, Any]) -> None:
    for c in deployment["spec"]["template"]["spec"]["containers"]:
        c["env"] = [e for e in c.get("env", []) if e["name"] != "LMCACHE_REMOTE_URL"]
    with pytest.raises(OperationError, match="enableL2Cache"):
        compute_patch(deployment, SETTINGS)


def test_the_container_carrying_the_url_is_patched_whatever_its_name(
    deployment: dict[str, Any],
) -> None:
    # The policy patches the container that carries LMCACHE_REMOTE_URL; patch targets the same one
    # even when the operator names it differently or puts it last.
    containers = deployment["spec"]["template"]["spec"]["containers"]
    (model,) = [c for c in containers if any(e["name"] == "LMCACHE_REMOTE_URL" for e in c["env"])]
    model["name"] = "inference"
    containers.append({"name": "reverse-proxy", "image": "nginx:1"})
    containers.reverse()
    index = containers.index(model)
    ops = compute_patch(deployment, SETTINGS)
    paths = {op["path"] for op in ops if op["op"] != "test"}
    assert any(p.startswith(f"/spec/template/spec/containers/{index}/env") for p in paths)
    assert all(
        p.startswith(f"/spec/template/spec/containers/{index}/")
        or p.startswith("/spec/template/spec/volumes")
        for p in paths
    )


def test_sequence_restores_operator_and_second_run_changes_nothing(
    kube: FakeKube, deployment: dict[str, Any]
) -> None:
    clients = _seed(kube, deployment)
    result = run_patch(clients, REF, SETTINGS, interval_s=0.01, show_progress=False)
    assert result.changed
    writes = kube.writes("PATCH")
    dep_path = f"{DEPLOYMENTS}/vllm-kvcache"
    op_scale = f"{OPERATOR}/hyperpod-inference-controller-manager/scale"
    assert [(p, c) for _, p, c in writes] == [
        (op_scale, "application/merge-patch+json"),  # pause operator
        (f"{dep_path}/scale", "application/merge-patch+json"),  # endpoint to 0
        (dep_path, "application/json-patch+json"),  # ONE patch: env + volume + mount
        (f"{dep_path}/scale", "application/merge-patch+json"),  # endpoint back
        (op_scale, "application/merge-patch+json"),  # operator restored
    ]
    stored = kube.get(dep_path)
    assert stored is not None and stored["spec"]["replicas"] == 2
    assert compute_patch(stored, SETTINGS) == []
    assert kube.get(f"{OPERATOR}/hyperpod-inference-controller-manager")["spec"]["replicas"] == 2  # type: ignore[index]

    kube.requests.clear()
    again = run_patch(clients, REF, SETTINGS, interval_s=0.01, show_progress=False)
    assert not again.changed and kube.writes() == []


def test_operator_restored_when_the_patch_request_fails(
    kube: FakeKube, deployment: dict[str, Any]
) -> None:
    clients = _seed(kube, deployment, operator_replicas=1)
    kube.fail[("PATCH", f"{DEPLOYMENTS}/vllm-kvcache")] = 500
    with pytest.raises(Exception, match="500"):
        run_patch(clients, REF, SETTINGS, interval_s=0.01, show_progress=False)
    assert kube.get(f"{OPERATOR}/hyperpod-inference-controller-manager")["spec"]["replicas"] == 1  # type: ignore[index]
    assert kube.writes("PATCH")[-1][1].endswith("hyperpod-inference-controller-manager/scale")


def test_operator_restored_when_the_rollout_times_out(
    kube: FakeKube, deployment: dict[str, Any]
) -> None:
    clients = _seed(kube, deployment)
    kube.after_write.clear()  # nothing makes the Pods Ready
    with pytest.raises(OperationError, match="timed out"):
        run_patch(clients, REF, SETTINGS, timeout_s=0.2, interval_s=0.05, show_progress=False)
    assert kube.get(f"{OPERATOR}/hyperpod-inference-controller-manager")["spec"]["replicas"] == 2  # type: ignore[index]


def test_rollout_progress_shows_ready_counts_on_a_fake_clock(
    kube: FakeKube, deployment: dict[str, Any]
) -> None:
    clients = _seed(kube, deployment)
    kube.after_write.clear()  # nothing makes the Pods Ready: the wait runs to its timeout
    fake = FakeClock()
    rep, stream = plain(fake)
    with pytest.raises(OperationError, match=r"timed out after 1m00s .* \(last state: "):
        run_patch(clients, REF, SETTINGS, timeout_s=60, interval_s=20, show_progress=rep)
    text = stream.getvalue()
    assert "waiting for vllm-kvcache to scale to 0 (up to 1m00s)" in text
    assert "vllm-kvcache to scale to 0: 2 Pods left (0s elapsed)" in text
    assert fake.t == 60  # the clock is fake: the minute took no real time
