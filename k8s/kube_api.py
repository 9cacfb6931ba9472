"""The cdk8s-plus API the charts build with, as types mypy can check.

At run time the charts take the cdk8s-plus package pinned for the cluster's Kubernetes minor
(``infra.facts.versions.SUPPORTED_KUBERNETES``), imported by name, so mypy cannot tell which. The
protocols below name every class the charts use, typed as the classes of one pinned package,
``REFERENCE`` (cdk8s-plus-33). It is the oldest: every other pinned package takes each of its
classes' fields with the same types and adds only optional ones (cdk8s-plus-34: a Container's
``restart_policy_rules``, a PodSpec's ``hostname_override``, an EnvVarSource's ``file_key_ref``;
a NetworkPolicySpec's ``pod_selector`` no longer required). So a chart that type-checks builds
with every pinned package; tests/k8s/test_kube_api.py checks that claim for each of them.

A class the charts start to use must be added here (mypy then reports the call until it is).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    # Only for mypy: at run time the chart loads the package of its cluster's minor, not this one.
    import cdk8s_plus_33 as kplus
    from cdk8s_plus_33 import k8s as kube

REFERENCE = "cdk8s_plus_33"


class KubeApi(Protocol):
    """The typed L1 classes of cdk8s-plus (its ``k8s`` module) that the charts build with."""

    Affinity: type[kube.Affinity]
    Capabilities: type[kube.Capabilities]
    ConfigMapVolumeSource: type[kube.ConfigMapVolumeSource]
    Container: type[kube.Container]
    ContainerPort: type[kube.ContainerPort]
    CronJobSpec: type[kube.CronJobSpec]
    CsiDriverSpec: type[kube.CsiDriverSpec]
    CsiPersistentVolumeSource: type[kube.CsiPersistentVolumeSource]
    DaemonSetSpec: type[kube.DaemonSetSpec]
    DaemonSetUpdateStrategy: type[kube.DaemonSetUpdateStrategy]
    DeploymentSpec: type[kube.DeploymentSpec]
    EmptyDirVolumeSource: type[kube.EmptyDirVolumeSource]
    EnvVar: type[kube.EnvVar]
    EnvVarSource: type[kube.EnvVarSource]
    ExecAction: type[kube.ExecAction]
    HostPathVolumeSource: type[kube.HostPathVolumeSource]
    IntOrString: type[kube.IntOrString]
    IpBlock: type[kube.IpBlock]
    JobSpec: type[kube.JobSpec]
    JobTemplateSpec: type[kube.JobTemplateSpec]
    KubeClusterRole: type[kube.KubeClusterRole]
    KubeClusterRoleBinding: type[kube.KubeClusterRoleBinding]
    KubeCronJob: type[kube.KubeCronJob]
    KubeCsiDriver: type[kube.KubeCsiDriver]
    KubeDaemonSet: type[kube.KubeDaemonSet]
    KubeDeployment: type[kube.KubeDeployment]
    KubeNetworkPolicy: type[kube.KubeNetworkPolicy]
    KubePersistentVolume: type[kube.KubePersistentVolume]
    KubePersistentVolumeClaim: type[kube.KubePersistentVolumeClaim]
    KubePersistentVolumeClaimProps: type[kube.KubePersistentVolumeClaimProps]
    KubeRole: type[kube.KubeRole]
    KubeRoleBinding: type[kube.KubeRoleBinding]
    KubeService: type[kube.KubeService]
    KubeStatefulSet: type[kube.KubeStatefulSet]
    KubeStorageClass: type[kube.KubeStorageClass]
    KubeValidatingAdmissionPolicy: type[kube.KubeValidatingAdmissionPolicy]
    KubeValidatingAdmissionPolicyBinding: type[kube.KubeValidatingAdmissionPolicyBinding]
    LabelSelector: type[kube.LabelSelector]
    LabelSelectorRequirement: type[kube.LabelSelectorRequirement]
    MatchResources: type[kube.MatchResources]
    NamedRuleWithOperations: type[kube.NamedRuleWithOperations]
    NetworkPolicyIngressRule: type[kube.NetworkPolicyIngressRule]
    NetworkPolicyPeer: type[kube.NetworkPolicyPeer]
    NetworkPolicyPort: type[kube.NetworkPolicyPort]
    NetworkPolicySpec: type[kube.NetworkPolicySpec]
    ObjectFieldSelector: type[kube.ObjectFieldSelector]
    ObjectMeta: type[kube.ObjectMeta]
    ObjectReference: type[kube.ObjectReference]
    PersistentVolumeClaimSpec: type[kube.PersistentVolumeClaimSpec]
    PersistentVolumeClaimVolumeSource: type[kube.PersistentVolumeClaimVolumeSource]
    PersistentVolumeSpec: type[kube.PersistentVolumeSpec]
    PodAffinityTerm: type[kube.PodAffinityTerm]
    PodAntiAffinity: type[kube.PodAntiAffinity]
    PodSecurityContext: type[kube.PodSecurityContext]
    PodSpec: type[kube.PodSpec]
    PodTemplateSpec: type[kube.PodTemplateSpec]
    PolicyRule: type[kube.PolicyRule]
    Probe: type[kube.Probe]
    Quantity: type[kube.Quantity]
    ResourceRequirements: type[kube.ResourceRequirements]
    RoleRef: type[kube.RoleRef]
    RollingUpdateDaemonSet: type[kube.RollingUpdateDaemonSet]
    SeccompProfile: type[kube.SeccompProfile]
    SecurityContext: type[kube.SecurityContext]
    ServicePort: type[kube.ServicePort]
    ServiceSpec: type[kube.ServiceSpec]
    StatefulSetPersistentVolumeClaimRetentionPolicy: type[
        kube.StatefulSetPersistentVolumeClaimRetentionPolicy
    ]
    StatefulSetSpec: type[kube.StatefulSetSpec]
    Subject: type[kube.Subject]
    Toleration: type[kube.Toleration]
    ValidatingAdmissionPolicyBindingSpec: type[kube.ValidatingAdmissionPolicyBindingSpec]
    ValidatingAdmissionPolicySpec: type[kube.ValidatingAdmissionPolicySpec]
    Validation: type[kube.Validation]
    Variable: type[kube.Variable]
    Volume: type[kube.Volume]
    VolumeMount: type[kube.VolumeMount]
    VolumeResourceRequirements: type[kube.VolumeResourceRequirements]
    WeightedPodAffinityTerm: type[kube.WeightedPodAffinityTerm]


class KPlusApi(Protocol):
    """The cdk8s-plus constructs the charts build with, and its ``k8s`` module."""

    ConfigMap: type[kplus.ConfigMap]
    Namespace: type[kplus.Namespace]
    PersistentVolume: type[kplus.PersistentVolume]
    PersistentVolumeAccessMode: type[kplus.PersistentVolumeAccessMode]
    PersistentVolumeClaim: type[kplus.PersistentVolumeClaim]
    ServiceAccount: type[kplus.ServiceAccount]
    k8s: KubeApi


if TYPE_CHECKING:
    # mypy proves the protocols are those of the package they name.
    _reference: KPlusApi = kplus
    _reference_k8s: KubeApi = kube
