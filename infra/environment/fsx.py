"""The FSx for Lustre L2 file system as the deployed kvcache stack reports it.

The file system only exists once ``make deploy`` has created it (kvcache stack, outputs
``L2FileSystemId``, ``L2FileSystemDnsName``, ``L2FileSystemMountName``). What needs its values
without CDK (``make manifests`` writing the static PersistentVolume as plain YAML) reads them
here with CloudFormation ``DescribeStacks``; when they cannot be read it gets one line that says
why and how to get them, never a placeholder to patch by hand.

Light on purpose (boto3 only when a lookup runs, in ``infra.environment.outputs``):
``k8s.l2_volume`` and the operations CLI import ``FsxVolume`` from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from infra.environment.layout import stack_name
from infra.environment.outputs import OutputsUnreadable, stack_outputs

if TYPE_CHECKING:
    from infra.config import AppConfig

KVCACHE_SUFFIX = "kvcache"
ID_OUTPUT = "L2FileSystemId"
DNS_OUTPUT = "L2FileSystemDnsName"
MOUNT_OUTPUT = "L2FileSystemMountName"


@dataclass(frozen=True)
class FsxVolume:
    """What a static FSx CSI volume names: the file system id (volumeHandle), its DNS name and
    its Lustre mount name (volumeAttributes dnsname and mountname)."""

    file_system_id: str
    dns_name: str
    mount_name: str


class FileSystemUnknown(Exception):
    """The deployed file system's values could not be read; the message is one line."""


def kvcache_stack_name(config: AppConfig) -> str:
    return stack_name(config, KVCACHE_SUFFIX)


def _unknown(config: AppConfig, reason: str, fix: str) -> FileSystemUnknown:
    return FileSystemUnknown(
        f"kvcache.l2_backend = 'fsx_lustre': the L2 PersistentVolume names the file system's id, "
        f"DNS name and mount name, read from the outputs of stack {kvcache_stack_name(config)} "
        f"({config.region}): {reason}; fix: {fix}"
    )


def _deploy_first(config: AppConfig) -> str:
    return f"deploy it first (`make deploy ENV={config.environment}` creates the file system)"


def deployed_file_system(config: AppConfig, cloudformation: Any = None) -> FsxVolume:
    """The file system of ``config``'s deployed kvcache stack. ``cloudformation``: a boto3
    client (default: one for the environment's region, default credentials)."""
    try:
        outputs = stack_outputs(
            config, kvcache_stack_name(config), _deploy_first(config), cloudformation
        )
    except OutputsUnreadable as exc:
        raise _unknown(config, exc.reason, exc.fix) from None
    missing = [k for k in (ID_OUTPUT, DNS_OUTPUT, MOUNT_OUTPUT) if not outputs.get(k)]
    if missing:
        raise _unknown(
            config,
            f"the stack has no output {missing[0]} (deployed with l2_backend curvine, or "
            "before the file system was part of it)",
            _deploy_first(config),
        )
    return FsxVolume(outputs[ID_OUTPUT], outputs[DNS_OUTPUT], outputs[MOUNT_OUTPUT])
