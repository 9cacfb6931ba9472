"""Deploy rehearsal: what the endpoint namespaces admit, beyond their Pod Security label.

The endpoint namespaces enforce Pod Security ``privileged`` (the operator's Pod mounts one host
path); the rendered ValidatingAdmissionPolicy brings them back to ``baseline`` but for that path.
Doubles: ``tests.doubles.cel`` evaluates the policy as the API server would (a CEL subset that
refuses what it does not model), held on every Pod here to Google's CEL implementation
(``tests.support.cel_engine``, cel-cpp); ``tests.doubles.pod_security`` holds the baseline
controls to compare with, and the operator's Pod is fixtures/operator_pod.yaml as Kyverno
mutates it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import kubernetes_validate
import pytest

from infra.facts.versions import SUPPORTED_KUBERNETES
from k8s.admission import NAME_LABEL, TOOLKIT_CACHE
from tests.doubles.cel import CelError, evaluate_policy, validation_outcomes
from tests.doubles.pod_security import violations
from tests.support import cel_engine
from tests.support.admission import operator_pods, pod_templates
from tests.support.config import MANAGED_NAMESPACE, TIERS_VARIANT
from tests.support.objects import OPERATOR_POD

Obj = dict[str, Any]
ENVS = ("dev", "test", "prod", "fsx")


def policy_and_binding(objs: list[Obj]) -> tuple[Obj, Obj]:
    (policy,) = [o for o in objs if o["kind"] == "ValidatingAdmissionPolicy"]
    (binding,) = [o for o in objs if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    return policy, binding


def endpoint_namespaces(objs: list[Obj]) -> set[str]:
    return {o["metadata"]["namespace"] for o in objs if o["kind"] == "InferenceEndpointConfig"}


def outcomes(policy: Obj, pod: Obj) -> tuple[list[bool | str], list[bool | str]]:
    """Each validation's outcome on ``pod`` (true, false or "error"): the emulator's, and
    cel-cpp's."""
    emulated = ["error" if isinstance(o, CelError) else o for o in validation_outcomes(policy, pod)]
    real = [
        "error" if isinstance(o, cel_engine.CelEvalError) else o
        for o in cel_engine.validation_outcomes(policy, pod)
    ]
    return emulated, real


def refused(objs: list[Obj], pod: Obj, ns: str = "inference", **kw: str) -> list[str]:
    """What the policy refuses ``pod`` with; every validation's outcome is also held to
    cel-cpp's, so no verdict here rests on the emulator alone."""
    policy, binding = policy_and_binding(objs)
    emulated, real = outcomes(policy, pod)
    assert emulated == real, (pod["metadata"], emulated, real)
    return evaluate_policy(policy, binding, pod, {NAME_LABEL: ns}, **kw)


def _pod(spec: Obj, ns: str = "inference") -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": ns}, "spec": spec}


@pytest.mark.parametrize("env", ENVS)
def test_the_operators_pod_and_every_pod_we_render_there_are_admitted(
    rendered_envs: dict[str, list[Obj]], env: str
) -> None:
    objs = rendered_envs[env]
    namespaces = endpoint_namespaces(objs)
    pods = [(ref, ns, spec) for ref, ns, spec in operator_pods(objs)]
    pods += [(ref, ns, spec) for ref, ns, spec in pod_templates(objs) if ns in namespaces]
    assert any("operator-rendered" in ref for ref, _, _ in pods)
    problems = [f"{ref}: {m}" for ref, ns, spec in pods for m in refused(objs, _pod(spec, ns), ns)]
    assert not problems, "\n".join(problems)


def _model(spec: Obj) -> Obj:
    (c,) = [c for c in spec["containers"] if c["name"] == "inference"]
    return c


def _sc(**fields: Any) -> Callable[[Obj], None]:
    def change(spec: Obj) -> None:
        _model(spec).setdefault("securityContext", {}).update(fields)

    return change


def _volume(path: str) -> Callable[[Obj], None]:
    def change(spec: Obj) -> None:
        spec["volumes"].append({"name": "extra", "hostPath": {"path": path}})

    return change


def _set(**fields: Any) -> Callable[[Obj], None]:
    return lambda spec: spec.update(fields)


def _init_privileged(spec: Obj) -> None:
    spec["initContainers"][0]["securityContext"] = {"privileged": True}


def _host_port(spec: Obj) -> None:
    _model(spec)["ports"] = [{"containerPort": 8000, "hostPort": 8000}]


def _probe_host(spec: Obj) -> None:
    """A liveness probe that asks the node's metadata service (IMDS) through the kubelet."""
    _model(spec)["livenessProbe"] = {"httpGet": {"host": "169.254.169.254", "port": 80}}


def _init_hook_host(spec: Obj) -> None:
    hook = {"tcpSocket": {"host": "localhost", "port": 22}}
    spec["initContainers"][0]["lifecycle"] = {"preStop": hook}


def _apparmor_annotation(pod: Obj) -> None:
    key = "container.apparmor.security.beta.kubernetes.io/inference"
    pod["metadata"]["annotations"] = {key: "unconfined"}


VIOLATIONS: dict[str, tuple[Callable[[Obj], None], str]] = {
    "privileged container": (_sc(privileged=True), "Privileged Containers"),
    "privileged init container": (_init_privileged, "Privileged Containers"),
    "hostNetwork": (_set(hostNetwork=True), "Host Namespaces"),
    "hostPID": (_set(hostPID=True), "Host Namespaces"),
    "another host path": (_volume("/var/run/containerd"), "HostPath Volumes"),
    "the cache's parent": (_volume("/dev/shm"), "HostPath Volumes"),
    "a path that climbs out of the cache": (_volume(f"{TOOLKIT_CACHE}/../.."), "HostPath Volumes"),
    "SYS_ADMIN added": (_sc(capabilities={"add": ["SYS_ADMIN"]}), "Capabilities"),
    "NET_RAW added": (_sc(capabilities={"add": ["CHOWN", "NET_RAW"]}), "Capabilities"),
    "hostPort": (_host_port, "Host Ports"),
    "unmasked /proc": (_sc(procMount="Unmasked"), "/proc Mount Type"),
    "seccomp unconfined": (_sc(seccompProfile={"type": "Unconfined"}), "Seccomp"),
    "apparmor unconfined": (_sc(appArmorProfile={"type": "Unconfined"}), "AppArmor"),
    "selinux user": (_sc(seLinuxOptions={"user": "system_u"}), "SELinux"),
    "unsafe sysctl": (
        _set(securityContext={"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}),
        "Sysctls",
    ),
    "probe host": (_probe_host, "Host Probes / Lifecycle Hooks"),
    "init container hook host": (_init_hook_host, "Host Probes / Lifecycle Hooks"),
}
# What baseline admits that an older copy of its rules refused.
ADMITTED: dict[str, Callable[[Obj], None]] = {
    "tcp buffer sysctls (safe from 1.32)": _set(
        securityContext={
            "sysctls": [
                {"name": "net.ipv4.tcp_rmem", "value": "4096 87380 6291456"},
                {"name": "net.ipv4.tcp_wmem", "value": "4096 16384 4194304"},
            ]
        }
    ),
    "probe without a host": lambda spec: _model(spec).update(
        readinessProbe={"httpGet": {"path": "/health", "port": 8000}}
    ),
}


def _violating(change: Callable[[Obj], None]) -> Obj:
    pod = copy.deepcopy(OPERATOR_POD)
    change(pod["spec"])
    return pod


@pytest.mark.parametrize("case", sorted(VIOLATIONS))
def test_what_baseline_refuses_is_refused_in_an_endpoint_namespace(
    rendered: list[Obj], case: str
) -> None:
    change, control = VIOLATIONS[case]
    pod = _violating(change)
    got = refused(rendered, pod)
    assert got and all(m.startswith(control) for m in got), got
    # The documented baseline agrees that this is beyond it (not only beyond our policy).
    assert [v for v in violations(pod["spec"], "baseline") if v.startswith(control)]


@pytest.mark.parametrize("case", sorted(ADMITTED))
def test_what_baseline_admits_is_admitted_in_an_endpoint_namespace(
    rendered: list[Obj], case: str
) -> None:
    pod = _violating(ADMITTED[case])
    assert refused(rendered, pod) == []
    assert [v for v in violations(pod["spec"], "baseline") if f"({TOOLKIT_CACHE})" not in v] == []


def test_kubectl_debug_cannot_add_a_container_that_probes_a_host(rendered: list[Obj]) -> None:
    pod = copy.deepcopy(OPERATOR_POD)
    probe = {"tcpSocket": {"host": "169.254.169.254", "port": 80}}
    pod["spec"]["ephemeralContainers"] = [
        {"name": "debug", "image": "busybox:1", "lifecycle": {"postStart": probe}}
    ]
    got = refused(rendered, pod, operation="UPDATE", resource="pods/ephemeralcontainers")
    assert got == ["Host Probes / Lifecycle Hooks: probes and lifecycle handlers must not set host"]


def test_the_policy_refuses_exactly_what_baseline_refuses_but_the_toolkit_cache(
    rendered: list[Obj],
) -> None:
    """Every crafted Pod, and the operator's own: refused by the policy if and only if baseline
    refuses something other than the ai-toolkit cache's hostPath."""
    pods = [copy.deepcopy(OPERATOR_POD)] + [_violating(c) for c, _ in VIOLATIONS.values()]
    pods += [_violating(change) for change in ADMITTED.values()]
    for pod in pods:
        beyond = [v for v in violations(pod["spec"], "baseline") if f"({TOOLKIT_CACHE})" not in v]
        assert bool(refused(rendered, pod)) == bool(beyond), (beyond, refused(rendered, pod))


def test_an_apparmor_annotation_that_unconfines_is_refused(rendered: list[Obj]) -> None:
    pod = copy.deepcopy(OPERATOR_POD)
    _apparmor_annotation(pod)
    assert refused(rendered, pod) == [
        "AppArmor: the AppArmor annotations must be runtime/default or localhost/*"
    ]


def test_kubectl_debug_cannot_add_a_privileged_container(rendered: list[Obj]) -> None:
    pod = copy.deepcopy(OPERATOR_POD)
    pod["spec"]["ephemeralContainers"] = [
        {"name": "debug", "image": "busybox:1", "securityContext": {"privileged": True}}
    ]
    got = refused(rendered, pod, operation="UPDATE", resource="pods/ephemeralcontainers")
    assert got == ["Privileged Containers: securityContext.privileged must be unset or false"]


def test_only_the_endpoint_namespaces_are_bound(rendered: list[Obj]) -> None:
    """The Curvine namespace runs privileged Pods by design: the policy must not reach it."""
    pod = _violating(_sc(privileged=True))
    assert refused(rendered, pod, "inference")
    for ns in ("curvine", "kube-system", "default"):
        assert refused(rendered, pod, ns) == [], ns


@pytest.mark.parametrize("minor", sorted(SUPPORTED_KUBERNETES))
def test_every_supported_minor_serves_the_policy_api(rendered: list[Obj], minor: str) -> None:
    """admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy is GA from 1.30: the OpenAPI
    schema of each minor the app supports must take both objects as rendered."""
    for obj in policy_and_binding(rendered):
        kubernetes_validate.validate(obj, SUPPORTED_KUBERNETES[minor].schema_version, strict=True)


def test_a_namespace_of_managed_tier_endpoints_is_bound_too(
    rendered_envs: dict[str, list[Obj]],
) -> None:
    """Its endpoints (tieredstorage, none) get no L2 claim and no Kyverno rule, but their Pods
    still run with privileged enforcement: the policy must reach them as it reaches the rest."""
    objs = rendered_envs[TIERS_VARIANT]
    assert MANAGED_NAMESPACE in endpoint_namespaces(objs)
    pod = _violating(_sc(privileged=True))
    assert refused(objs, pod, MANAGED_NAMESPACE)
    assert refused(objs, copy.deepcopy(OPERATOR_POD), MANAGED_NAMESPACE) == []


def test_the_cel_emulator_agrees_with_cel_cpp_on_every_pod_these_tests_use(
    rendered_envs: dict[str, list[Obj]],
) -> None:
    """Every validation, on the operator's Pod, every Pod we render in an endpoint namespace,
    each crafted violation and each Pod baseline admits: the emulator's outcome is cel-cpp's
    (both refuse or both admit, an evaluation error alike), and the check has both outcomes to
    compare (a pod refused by each control)."""
    objs = rendered_envs["dev"]
    policy, _ = policy_and_binding(objs)
    pods = [copy.deepcopy(OPERATOR_POD)]
    pods += [_pod(spec, ns) for env in ENVS for _, ns, spec in pod_templates(rendered_envs[env])]
    pods += [_violating(change) for change, _ in VIOLATIONS.values()]
    pods += [_violating(change) for change in ADMITTED.values()]
    seen: set[bool | str] = set()
    for pod in pods:
        emulated, real = outcomes(policy, pod)
        assert emulated == real, (pod["metadata"], emulated, real)
        seen |= set(real)
    assert seen >= {True, False}
