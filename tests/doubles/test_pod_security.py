"""The Pod Security double agrees with kubernetes/pod-security-admission (``policy/check_*.go``
at v0.34.0) where the tests lean on it: the 1.34 probe and lifecycle host check, the safe
sysctls of each policy version, and restricted's non-root checks, which judge every explicit
field where it is set.

Double under test: ``tests.doubles.pod_security`` itself, on crafted Pod specs."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.doubles.pod_security import violations

Obj = dict[str, Any]
BASE: Obj = {"containers": [{"name": "app", "image": "app:1"}]}


def _spec(**container: Any) -> Obj:
    spec = copy.deepcopy(BASE)
    spec["containers"][0].update(container)
    return spec


def _controls(spec: Obj, level: str = "baseline", version: str = "1.34") -> set[str]:
    return {v.split(":", 1)[0] for v in violations(spec, level, version)}


HOST = "Host Probes / Lifecycle Hooks"


@pytest.mark.parametrize(
    "container",
    [
        {"livenessProbe": {"httpGet": {"host": "169.254.169.254", "port": 80}}},
        {"readinessProbe": {"tcpSocket": {"host": "10.0.0.1", "port": 80}}},
        {"startupProbe": {"httpGet": {"host": "localhost", "port": 8080}}},
        {"lifecycle": {"postStart": {"httpGet": {"host": "127.0.0.1", "port": 80}}}},
        {"lifecycle": {"preStop": {"tcpSocket": {"host": "example.com", "port": 80}}}},
    ],
    ids=["liveness-http", "readiness-tcp", "startup-localhost", "post-start", "pre-stop"],
)
def test_a_probe_or_hook_naming_a_host_is_refused_by_baseline_from_1_34(container: Obj) -> None:
    spec = _spec(**container)
    assert _controls(spec) == {HOST}
    assert _controls(spec, "restricted") >= {HOST}
    assert HOST not in _controls(spec, version="1.33")
    assert _controls(spec, "privileged") == set()


def test_the_host_check_covers_init_and_ephemeral_containers() -> None:
    probe = {"livenessProbe": {"httpGet": {"host": "169.254.169.254", "port": 80}}}
    for where in ("initContainers", "ephemeralContainers"):
        spec = copy.deepcopy(BASE)
        spec[where] = [{"name": "x", "image": "x:1", **probe}]
        assert _controls(spec) == {HOST}, where


@pytest.mark.parametrize(
    "container",
    [
        {"livenessProbe": {"httpGet": {"port": 80}}},
        {"livenessProbe": {"httpGet": {"host": "", "port": 80}}},
        {"readinessProbe": {"exec": {"command": ["true"]}}},
        {"startupProbe": {"grpc": {"port": 9000}}},
        {"lifecycle": {"preStop": {"sleep": {"seconds": 5}}}},
    ],
)
def test_a_probe_without_a_host_passes(container: Obj) -> None:
    assert _controls(_spec(**container)) == set()


@pytest.mark.parametrize("name", ["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"])
def test_the_tcp_buffer_sysctls_are_safe_from_1_32(name: str) -> None:
    spec = {**copy.deepcopy(BASE), "securityContext": {"sysctls": [{"name": name, "value": "1"}]}}
    assert _controls(spec, version="1.32") == set()
    assert _controls(spec, version="1.34") == set()
    unsafe = {**spec, "securityContext": {"sysctls": [{"name": "kernel.msgmax", "value": "1"}]}}
    assert _controls(unsafe) == {"Sysctls"}


def _restricted_ok() -> Obj:
    sc = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsNonRoot": True,
        "runAsUser": 1000,
    }
    return _spec(securityContext=sc)


NON_ROOT = {"Running as Non-root", "Running as Non-root user"}


def test_a_pod_that_runs_as_non_root_everywhere_passes_restricted() -> None:
    assert _controls(_restricted_ok(), "restricted") == set()


@pytest.mark.parametrize(
    ("pod", "control"),
    [
        ({"runAsNonRoot": False}, "Running as Non-root"),
        ({"runAsUser": 0}, "Running as Non-root user"),
    ],
)
def test_a_pod_level_root_setting_is_refused_even_when_every_container_overrides_it(
    pod: Obj, control: str
) -> None:
    """Upstream judges the Pod's field where it is set: the containers' own true and non-zero
    values do not excuse it, although the kubelet would run them as non-root."""
    spec = _restricted_ok()
    spec["securityContext"] = pod
    assert _controls(spec, "restricted") & NON_ROOT == {control}
    assert _controls(spec, "baseline") == set()


def test_a_container_without_run_as_non_root_needs_the_pods_true() -> None:
    spec = _restricted_ok()
    del spec["containers"][0]["securityContext"]["runAsNonRoot"]
    assert _controls(spec, "restricted") & NON_ROOT == {"Running as Non-root"}
    spec["securityContext"] = {"runAsNonRoot": True}
    assert _controls(spec, "restricted") == set()


def test_an_unknown_policy_version_is_refused() -> None:
    with pytest.raises(ValueError, match="not modelled"):
        violations(BASE, "baseline", "1.20")
