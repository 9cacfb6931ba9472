"""The Pod Security Standards' baseline and restricted checks, as a small test helper.

From "Pod Security Standards" in the Kubernetes documentation, v1.34
(kubernetes.io/docs/concepts/security/pod-security-standards/): each control, the fields it reads
and the values it allows. ``violations(spec, level)`` returns one line per refused field, naming
the control; ``privileged`` allows everything. Windows-only and annotation-based controls are
included where they read Pod fields we could render.
"""

from __future__ import annotations

from typing import Any

LEVELS = ("privileged", "baseline", "restricted")
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
SAFE_SYSCTLS = {
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}
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


def _containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        *spec.get("initContainers", []),
        *spec["containers"],
        *spec.get("ephemeralContainers", []),
    ]


def _baseline(spec: dict[str, Any]) -> list[str]:
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
        if s["name"] not in SAFE_SYSCTLS:
            out.append(f"Sysctls: {s['name']}")
    return out


def _restricted(spec: dict[str, Any]) -> list[str]:
    out = []
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
        if not sc.get("runAsNonRoot", psc.get("runAsNonRoot")):
            out.append(f"Running as Non-root: {name} runAsNonRoot is not true")
        if sc.get("runAsUser", psc.get("runAsUser")) == 0:
            out.append(f"Running as Non-root user: {name} runAsUser 0")
        seccomp = (sc.get("seccompProfile") or psc.get("seccompProfile") or {}).get("type")
        if seccomp not in ("RuntimeDefault", "Localhost"):
            out.append(f"Seccomp: {name} seccompProfile.type is {seccomp}")
        caps = sc.get("capabilities") or {}
        if "ALL" not in caps.get("drop", []):
            out.append(f"Capabilities: {name} does not drop ALL")
        if set(caps.get("add", [])) - {"NET_BIND_SERVICE"}:
            out.append(f"Capabilities: {name} adds {sorted(caps['add'])}")
    return out


def violations(spec: dict[str, Any], level: str) -> list[str]:
    """What Pod Security admission at ``level`` refuses in the Pod spec ``spec``."""
    if level not in LEVELS:
        raise ValueError(f"unknown Pod Security level {level!r}")
    if level == "privileged":
        return []
    out = _baseline(spec)
    return out + _restricted(spec) if level == "restricted" else out
