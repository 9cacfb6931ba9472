"""What the endpoint namespaces admit: Pod Security ``baseline`` plus the one host path the
operator's model Pod mounts.

Why not the ``baseline`` label: the operator renders the model Pod with a hostPath volume of
``/dev/shm/ai_toolkit_cache`` (the ai-toolkit daemon's shared memory, read by LMCache's
sagemaker-hyperpod backend), and Pod Security ``baseline`` refuses every hostPath volume, with no
exception by path. So those namespaces enforce ``privileged`` (k8s/foundation.py) and this
ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1, GA since Kubernetes 1.30) enforces
the baseline controls there instead, with that one path allowed. A VAP rather than a Kyverno
rule: the API server evaluates it itself, so admission does not hang on Kyverno's availability.

The controls and allowed values follow "Pod Security Standards" (kubernetes.io, v1.34), field
by field, and the checks of kubernetes/pod-security-admission v0.34.0 where the page is terse:
the 1.34 probe and lifecycle host check (on a 1.33 cluster, where baseline lacks it, this policy
is the stricter) and the safe sysctls of 1.32 onwards. The warn and audit labels stay at
``restricted``. The binding selects the namespaces by
``kubernetes.io/metadata.name``, which the API server sets and nobody can remove.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from k8s.common import meta
from k8s.kube_api import KubeApi
from k8s.names import labels

if TYPE_CHECKING:
    from constructs import Construct

    from k8s.kube_api import kube

POLICY_NAME = "endpoint-pod-baseline"
TOOLKIT_CACHE = "/dev/shm/ai_toolkit_cache"
NAME_LABEL = "kubernetes.io/metadata.name"

BASELINE_CAPS = (
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
)
SAFE_SYSCTLS = (
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
    "net.ipv4.tcp_rmem",  # safe from 1.32 (check_sysctls.go); the app supports 1.33 and 1.34
    "net.ipv4.tcp_wmem",
)
# Handlers that may name a host (httpGet, tcpSocket): the probes and the lifecycle hooks.
PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
HOOKS = ("lifecycle.postStart", "lifecycle.preStop")
SELINUX_TYPES = ("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t")
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"

# Every container the Pod runs, init and ephemeral (kubectl debug) ones included.
CONTAINERS = (
    "object.spec.containers"
    " + (has(object.spec.initContainers) ? object.spec.initContainers : [])"
    " + (has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : [])"
)


def _cel_list(values: tuple[str, ...]) -> str:
    return "[" + ", ".join(f"'{v}'" for v in values) + "]"


def unset_or(base: str, path: str, cond: str) -> str:
    """``cond`` on ``base.path`` (where ``@`` names it), true when any field on the way is unset:
    CEL refuses to read a field that is absent."""
    parts = path.split(".")
    guards = [f"!has({base}.{'.'.join(parts[: i + 1])})" for i in range(len(parts))]
    return " || ".join([*guards, cond.replace("@", f"{base}.{path}")])


def both(path: str, cond: str) -> str:
    """``cond`` on the Pod's ``securityContext.path`` and on every container's."""
    pod = unset_or("object.spec", f"securityContext.{path}", cond)
    each = unset_or("c", f"securityContext.{path}", cond)
    return f"({pod}) && variables.containers.all(c, {each})"


def no_host(base: str) -> str:
    """No probe or lifecycle handler of container ``base`` names a host: unset or empty."""
    empty = "@ == ''"
    return " && ".join(
        f"({unset_or(base, f'{handler}.{action}.host', empty)})"
        for handler in (*PROBES, *HOOKS)
        for action in ("httpGet", "tcpSocket")
    )


def baseline_checks() -> list[tuple[str, str]]:
    """(CEL expression, message) of each baseline control, hostPath narrowed to one path."""
    return [
        (
            " && ".join(
                f"({unset_or('object.spec', f, '!@')})"
                for f in ("hostNetwork", "hostPID", "hostIPC")
            ),
            "Host Namespaces: hostNetwork, hostPID and hostIPC must be unset or false",
        ),
        (
            both("windowsOptions.hostProcess", "!@"),
            "HostProcess: windowsOptions.hostProcess must be unset or false",
        ),
        (
            unset_or(
                "object.spec",
                "volumes",
                f"@.all(v, !has(v.hostPath) || v.hostPath.path == '{TOOLKIT_CACHE}')",
            ),
            f"HostPath Volumes: only {TOOLKIT_CACHE} (the ai-toolkit cache) may be mounted",
        ),
        (
            f"variables.containers.all(c, {unset_or('c', 'securityContext.privileged', '!@')})",
            "Privileged Containers: securityContext.privileged must be unset or false",
        ),
        (
            "variables.containers.all(c, "
            + unset_or(
                "c",
                "securityContext.capabilities.add",
                f"@.all(cap, cap in {_cel_list(BASELINE_CAPS)})",
            )
            + ")",
            "Capabilities: only the baseline capabilities may be added",
        ),
        (
            "variables.containers.all(c, "
            + unset_or("c", "ports", "@.all(p, !has(p.hostPort) || p.hostPort == 0)")
            + ")",
            "Host Ports: hostPort must be unset or 0",
        ),
        (
            "variables.containers.all(c, "
            + unset_or("c", "securityContext.procMount", "@ == 'Default'")
            + ")",
            "/proc Mount Type: procMount must be unset or Default",
        ),
        (
            f"variables.containers.all(c, {no_host('c')})",
            "Host Probes / Lifecycle Hooks: probes and lifecycle handlers must not set host",
        ),
        (
            both("seccompProfile.type", "@ != 'Unconfined'"),
            "Seccomp: seccompProfile.type must not be Unconfined",
        ),
        (
            both("appArmorProfile.type", "@ in ['RuntimeDefault', 'Localhost']"),
            "AppArmor: appArmorProfile.type must be unset, RuntimeDefault or Localhost",
        ),
        (
            unset_or(
                "object",
                "metadata.annotations",
                f"@.all(k, !k.startsWith('{APPARMOR_ANNOTATION}')"
                " || @[k] == 'runtime/default' || @[k].startsWith('localhost/'))",
            ),
            "AppArmor: the AppArmor annotations must be runtime/default or localhost/*",
        ),
        (
            both("seLinuxOptions.type", f"@ in {_cel_list(SELINUX_TYPES)}")
            + " && "
            + both("seLinuxOptions.user", "false")  # false: the field must be unset
            + " && "
            + both("seLinuxOptions.role", "false"),
            "SELinux: seLinuxOptions.type must be a container type; user and role unset",
        ),
        (
            unset_or(
                "object.spec",
                "securityContext.sysctls",
                f"@.all(s, s.name in {_cel_list(SAFE_SYSCTLS)})",
            ),
            "Sysctls: only the safe sysctls may be set",
        ),
    ]


def endpoint_admission(scope: Construct, k8s: KubeApi, namespaces: list[str]) -> None:
    """The policy and its binding to ``namespaces`` (nothing without endpoint namespaces)."""
    if not namespaces:
        return
    k8s.KubeValidatingAdmissionPolicy(
        scope,
        POLICY_NAME,
        metadata=meta(k8s, POLICY_NAME, labels=labels(POLICY_NAME, "admission")),
        spec=k8s.ValidatingAdmissionPolicySpec(
            failure_policy="Fail",
            match_constraints=k8s.MatchResources(
                resource_rules=[
                    k8s.NamedRuleWithOperations(
                        api_groups=[""],
                        api_versions=["v1"],
                        operations=["CREATE", "UPDATE"],
                        resources=["pods", "pods/ephemeralcontainers"],
                    )
                ]
            ),
            variables=[k8s.Variable(name="containers", expression=CONTAINERS)],
            validations=[
                k8s.Validation(expression=expr, message=msg) for expr, msg in baseline_checks()
            ],
        ),
    )
    k8s.KubeValidatingAdmissionPolicyBinding(
        scope,
        f"{POLICY_NAME}-binding",
        metadata=meta(k8s, POLICY_NAME, labels=labels(POLICY_NAME, "admission")),
        spec=k8s.ValidatingAdmissionPolicyBindingSpec(
            policy_name=POLICY_NAME,
            validation_actions=["Deny"],
            match_resources=_in_namespaces(k8s, namespaces),
        ),
    )


def _in_namespaces(k8s: KubeApi, namespaces: list[str]) -> kube.MatchResources:
    return k8s.MatchResources(
        namespace_selector=k8s.LabelSelector(
            match_expressions=[
                k8s.LabelSelectorRequirement(key=NAME_LABEL, operator="In", values=namespaces)
            ]
        )
    )
