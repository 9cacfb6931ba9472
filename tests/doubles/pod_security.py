"""The Pod Security Standards' baseline and restricted checks, as a small test helper.

From "Pod Security Standards" in the Kubernetes documentation, v1.34
(kubernetes.io/docs/concepts/security/pod-security-standards/), and where it is terse, from the
checks themselves (kubernetes/pod-security-admission, ``policy/check_*.go`` at v0.34.0, commit
19952357): each control, the fields it reads and the values it allows. ``violations(spec,
level, version)`` returns one line per refused field, naming the control; ``privileged`` allows
everything. ``version`` is the policy version the namespace enforces (its
``enforce-version``, or with ``latest`` the cluster's minor): the checks that changed between
1.32 and 1.34 follow it.

- Host Probes / Lifecycle Hooks (``hostProbesAndHostLifecycle``, baseline, from 1.34): a
  non-empty ``host`` in the ``httpGet`` or ``tcpSocket`` of a liveness, readiness or startup
  probe, or of a postStart or preStop handler, of any init, regular or ephemeral container, is
  refused, ``localhost`` included.
- Sysctls (baseline): the safe set grows with the version (1.27, 1.29, 1.32; the two 1.37 names
  are in no released version this models).
- Running as Non-root and Non-root user (restricted): each explicit field is judged on its own,
  as upstream does: a Pod-level ``runAsNonRoot: false`` or ``runAsUser: 0`` is refused even
  when every container overrides it; a container without ``runAsNonRoot`` passes only under a
  Pod-level ``true``. (The user-namespace relaxation, ``hostUsers: false``, needs an alpha
  feature gate in 1.34 and is not modelled: such a Pod is refused here.)

Windows-only and annotation-based controls are included where they read Pod fields we could
render.
"""

from __future__ import annotations

from typing import Any

LEVELS = ("privileged", "baseline", "restricted")
VERSIONS = ("1.32", "1.33", "1.34", "1.35", "1.36")  # the policy versions this models
BASELINE_CAPS = {
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
}
# check_sysctls.go: the safe sysctls, by the policy version that added them.
SAFE_SYSCTLS_SINCE = {
    "kernel.shm_rmid_forced": "1.0",
    "net.ipv4.ip_local_port_range": "1.0",
    "net.ipv4.ip_unprivileged_port_start": "1.0",
    "net.ipv4.tcp_syncookies": "1.0",
    "net.ipv4.ping_group_range": "1.0",
    "net.ipv4.ip_local_reserved_ports": "1.27",
    "net.ipv4.tcp_keepalive_time": "1.29",
    "net.ipv4.tcp_fin_timeout": "1.29",
    "net.ipv4.tcp_keepalive_intvl": "1.29",
    "net.ipv4.tcp_keepalive_probes": "1.29",
    "net.ipv4.tcp_rmem": "1.32",
    "net.ipv4.tcp_wmem": "1.32",
}
HOST_PROBES_SINCE = "1.34"
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
HOOKS = ("postStart", "preStop")
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}
RESTRICTED_VOLUMES = {
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
}


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")
    return int(major), int(minor)


def safe_sysctls(version: str) -> set[str]:
    """The sysctls baseline allows at policy ``version``."""
    return {n for n, since in SAFE_SYSCTLS_SINCE.items() if _minor(since) <= _minor(version)}


def _hosts(container: dict[str, Any]) -> list[str]:
    """The non-empty hosts of the container's probes and lifecycle handlers."""
    lifecycle = container.get("lifecycle") or {}
    handlers = [container.get(p) for p in PROBES] + [lifecycle.get(h) for h in HOOKS]
    return [
        (handler.get(action) or {}).get("host", "")
        for handler in handlers
        if handler
        for action in ("httpGet", "tcpSocket")
        if (handler.get(action) or {}).get("host")
    ]


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        *spec.get("initContainers", []),
        *spec["containers"],
        *spec.get("ephemeralContainers", []),
    ]


def _baseline(spec: dict[str, Any], version: str) -> list[str]:
    out = []
    psc = spec.get("securityContext") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            out.append(f"Host Namespaces: {field}=true")
    if (psc.get("windowsOptions") or {}).get("hostProcess"):
        out.append("HostProcess: pod windowsOptions.hostProcess=true")
    for v in spec.get("volumes", []):
        if "hostPath" in v:
            out.append(f"HostPath Volumes: {v['name']} ({v['hostPath'].get('path')})")
    contexts = [("pod", psc)]
    for c in _containers(spec):
        sc = c.get("securityContext") or {}
        contexts.append((f"container {c['name']}", sc))
        if sc.get("privileged"):
            out.append(f"Privileged Containers: {c['name']}")
        if (sc.get("windowsOptions") or {}).get("hostProcess"):
            out.append(f"HostProcess: {c['name']}")
        extra = set((sc.get("capabilities") or {}).get("add", [])) - BASELINE_CAPS
        if extra:
            out.append(f"Capabilities: {c['name']} adds {sorted(extra)}")
        for p in c.get("ports", []):
            if p.get("hostPort"):
                out.append(f"Host Ports: {c['name']} hostPort {p['hostPort']}")
        if sc.get("procMount", "Default") != "Default":
            out.append(f"/proc Mount Type: {c['name']} procMount {sc['procMount']}")
        if _minor(version) >= _minor(HOST_PROBES_SINCE):
            out += [
                f"Host Probes / Lifecycle Hooks: {c['name']} uses probe or lifecycle host {h}"
                for h in _hosts(c)
            ]
    for where, sc in contexts:
        if (sc.get("appArmorProfile") or {}).get("type", "RuntimeDefault") not in (
            "RuntimeDefault",
            "Localhost",
        ):
            out.append(f"AppArmor: {where} {sc['appArmorProfile']['type']}")
        se = sc.get("seLinuxOptions") or {}
        if se.get("type", "") not in SELINUX_TYPES or se.get("user") or se.get("role"):
            out.append(f"SELinux: {where} {se}")
        if (sc.get("seccompProfile") or {}).get("type") == "Unconfined":
            out.append(f"Seccomp: {where} Unconfined")
    for s in psc.get("sysctls", []):
        if s["name"] not in safe_sysctls(version):
            out.append(f"Sysctls: {s['name']}")
    return out


def _non_root(spec: dict[str, Any]) -> list[str]:
    """check_runAsNonRoot.go and check_runAsUser.go: every explicit ``runAsNonRoot: false`` and
    ``runAsUser: 0`` is refused where it is set, the Pod's included; a container that leaves
    ``runAsNonRoot`` unset needs the Pod's ``true``."""
    psc = spec.get("securityContext") or {}
    out = []
    if psc.get("runAsNonRoot") is False:
        out.append("Running as Non-root: pod sets runAsNonRoot=false")
    if psc.get("runAsUser") == 0:
        out.append("Running as Non-root user: pod sets runAsUser=0")
    for c in _containers(spec):
        sc = c.get("securityContext") or {}
        name = c["name"]
        if sc.get("runAsNonRoot") is False:
            out.append(f"Running as Non-root: {name} sets runAsNonRoot=false")
        elif sc.get("runAsNonRoot") is None and psc.get("runAsNonRoot") is not True:
            out.append(f"Running as Non-root: {name} runAsNonRoot is not true (pod or container)")
        if sc.get("runAsUser") == 0:
            out.append(f"Running as Non-root user: {name} sets runAsUser=0")
    return out


def _restricted(spec: dict[str, Any]) -> list[str]:
    out = _non_root(spec)
    psc = spec.get("securityContext") or {}
    for v in spec.get("volumes", []):
        kinds = set(v) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            out.append(f"Volume Types: {v['name']} is {sorted(kinds)}")
    for c in _containers(spec):
        sc = c.get("securityContext") or {}
        name = c["name"]
        if sc.get("allowPrivilegeEscalation") is not False:
            out.append(f"Privilege Escalation: {name} allowPrivilegeEscalation is not false")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"Seccomp: {name} seccompProfile.type is {seccomp}")
        caps = sc.get("capabilities") or {}
        if "ALL" not in caps.get("drop", []):
            out.append(f"Capabilities: {name} does not drop ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            out.append(f"Capabilities: {name} adds {sorted(caps['add'])}")
    return out


def violations(spec: dict[str, Any], level: str, version: str = "1.34") -> list[str]:
    """What Pod Security admission at ``level`` (policy ``version``, a minor) refuses in the Pod
    spec ``spec``."""
    if level not in LEVELS:
        raise ValueError(f"unknown Pod Security level {level!r}")
    if version not in VERSIONS:
        raise ValueError(f"Pod Security policy version {version!r}: not modelled ({VERSIONS})")
    if level == "privileged":
        return []
    out = _baseline(spec, version)
    return out + _restricted(spec) if level == "restricted" else out
