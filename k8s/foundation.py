"""Namespaces (with Pod Security labels) and the two StorageClasses."""

from __future__ import annotations

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.config.curvine import CURVINE_FS_PATH
from k8s.admission import endpoint_admission
from k8s.common import EBS_SC, k8s_for, kplus_for, meta
from k8s.curvine import FUSE_WEB_PORT, master_addrs
from k8s.kube_api import KubeApi
from k8s.names import CURVINE_SC, labels
from k8s.network_policy import endpoint_network_policies

PSA = "pod-security.kubernetes.io"


def psa_labels(level: str, warn: str) -> dict[str, str]:
    """Enforce ``level``; warn and audit at ``warn`` (``restricted`` but where every Pod is
    privileged by design) so anything beyond the strictest level shows in warnings and the
    audit log."""
    return {
        f"{PSA}/enforce": level,
        f"{PSA}/enforce-version": "latest",
        f"{PSA}/warn": warn,
        f"{PSA}/audit": warn,
    }


def endpoint_namespaces(config: AppConfig) -> list[str]:
    return sorted({e.namespace for e in config.kvcache.endpoints})


def l2_namespaces(config: AppConfig) -> list[str]:
    """The namespaces whose endpoints mount the shared L2 (curvine or fsx_lustre): each gets the
    L2 claim and its evictor; a tieredstorage or none endpoint mounts nothing."""
    return sorted({e.namespace for e in config.kvcache.mounted_l2_endpoints})


class NamespacesChart(cdk8s.Chart):
    def __init__(self, scope: Construct, id: str, *, config: AppConfig):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        kplus = kplus_for(config)
        kv = config.kvcache
        # An installed Kyverno (kyverno.install false) keeps its own namespace; without the L2
        # policy no Kyverno is installed.
        levels = {kv.kyverno.namespace: "baseline"} if kv.installs_kyverno else {}
        # Endpoint namespaces enforce privileged: with Tiered Storage the operator renders the
        # model Pod with a hostPath volume (/dev/shm/ai_toolkit_cache, the ai-toolkit daemon's
        # shared memory that LMCache's sagemaker-hyperpod backend reads), and baseline refuses
        # every hostPath volume, so the ReplicaSet could create no Pod. Only privileged admits
        # hostPath; warn and audit stay at restricted so anything else shows.
        levels.update({ns: "privileged" for ns in endpoint_namespaces(config)})
        if "curvine" in kv.l2_backends:
            # The CSI node plugin mounts FUSE with Bidirectional propagation and the workers
            # write the host NVMe.
            levels[kv.curvine.namespace] = "privileged"
        # Curvine's Pods are all privileged by design: warnings there would only be noise.
        warns = {ns: "privileged" if ns == kv.curvine.namespace else "restricted" for ns in levels}
        for ns, level in sorted(levels.items()):
            kplus.Namespace(
                self,
                ns,
                metadata=cdk8s.ApiObjectMetadata(
                    name=ns,
                    labels={
                        **labels(ns, "namespace"),
                        **psa_labels(level, warns[ns]),
                    },
                ),
            )
        # What privileged enforcement leaves open there, the policy closes: baseline plus the
        # operator's one host path (k8s/admission.py).
        endpoint_admission(self, kplus.k8s, endpoint_namespaces(config))
        endpoint_network_policies(self, kplus.k8s, config)


class StorageChart(cdk8s.Chart):
    """StorageClasses (typed L1: cdk8s-plus has no StorageClass construct)."""

    def __init__(self, scope: Construct, id: str, *, config: AppConfig):
        super().__init__(scope, id, disable_resource_name_hashes=True)
        k8s = k8s_for(config)
        if config.kvcache.curvine.master.storage_class is None:
            self._ebs(k8s)
        if "curvine" not in config.kvcache.l2_backends:
            return
        k8s.KubeStorageClass(
            self,
            CURVINE_SC,
            metadata=meta(
                k8s,
                CURVINE_SC,
                labels=labels(CURVINE_SC, "storage"),
            ),
            provisioner="curvine",
            parameters=curvine_volume_parameters(config),
            volume_binding_mode="Immediate",
            reclaim_policy="Delete",
        )

    def _ebs(self, k8s: KubeApi) -> None:
        k8s.KubeStorageClass(
            self,
            EBS_SC,
            metadata=meta(k8s, EBS_SC, labels=labels(EBS_SC, "storage")),
            provisioner="ebs.csi.aws.com",
            parameters={"type": "gp3", "encrypted": "true", "csi.storage.k8s.io/fstype": "ext4"},
            volume_binding_mode="WaitForFirstConsumer",
            reclaim_policy="Delete",
            allow_volume_expansion=True,
        )


def curvine_volume_parameters(config: AppConfig, web_port: int = FUSE_WEB_PORT) -> dict[str, str]:
    """StorageClass/PV parameters: the CSI driver passes unknown keys to curvine-fuse as flags.
    ``web_port``: the FUSE process's metrics port, one per parameter set (k8s/curvine.py)."""
    cv = config.kvcache.curvine
    return {
        "master-addrs": master_addrs(cv),
        "fs-path": CURVINE_FS_PATH,
        "path-type": "DirectoryOrCreate",
        "io-threads": str(cv.fuse.io_threads),
        "worker-threads": str(cv.fuse.worker_threads),
        # Files written through the mount expire and are deleted after the TTL.
        "client.ttl-ms": f"{cv.ttl_hours}h",
        "client.ttl-action": "delete",
        # curvine-fuse's own default is left unwritten: StorageClass parameters cannot change
        # in place, so curvine-sc keeps the parameters it was created with.
        **({"web-port": str(web_port)} if web_port != FUSE_WEB_PORT else {}),
    }
