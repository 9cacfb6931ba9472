"""The observability AMP workspace as the scaler addresses it.

KEDA's Prometheus scaler appends ``/api/v1/query`` to the InferenceEndpointConfig's
``serverAddress``, and the operator's CRD (3.2) takes only
``https://aps-workspaces.<region>.amazonaws.com/workspaces/ws-<id>`` there: no trailing ``/``,
so the workspace's ``PrometheusEndpoint`` attribute (which ends in one) cannot be reused. The
address is built from the region and the workspace id.

In CDK the id is the observability stack's token; ``make manifests`` reads it from that stack's
``WorkspaceId`` output (``infra.environment.outputs``; boto3 only when a lookup runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from infra.environment.layout import stack_name
from infra.environment.outputs import OutputsUnreadable, stack_outputs

if TYPE_CHECKING:
    from infra.config import AppConfig

OBSERVABILITY_SUFFIX = "observability"
WORKSPACE_ID_OUTPUT = "WorkspaceId"


@dataclass(frozen=True)
class AmpWorkspace:
    workspace_id: str
    """``ws-...`` (a CDK token inside the app)."""
    region: str

    @property
    def query_address(self) -> str:
        """KEDA's ``serverAddress``: the workspace's Prometheus-compatible root."""
        return f"https://aps-workspaces.{self.region}.amazonaws.com/workspaces/{self.workspace_id}"


class WorkspaceUnknown(Exception):
    """The deployed workspace's id could not be read; the message is one line."""


def workspace_alias(config: AppConfig) -> str:
    """The alias the observability stack gives the workspace, by which ``hpkv report`` finds it."""
    return f"{config.stack_prefix}-kvcache"


def observability_stack_name(config: AppConfig) -> str:
    return stack_name(config, OBSERVABILITY_SUFFIX)


def deployed_workspace(config: AppConfig, cloudformation: Any = None) -> AmpWorkspace:
    """The workspace of ``config``'s deployed observability stack. ``cloudformation``: a boto3
    client (default: one for the environment's region, default credentials)."""
    name = observability_stack_name(config)

    def unknown(reason: str, fix: str) -> WorkspaceUnknown:
        return WorkspaceUnknown(
            f"an autoscaled endpoint's serverAddress names the AMP workspace, read from output "
            f"{WORKSPACE_ID_OUTPUT} of stack {name} ({config.region}): {reason}; fix: {fix}"
        )

    deploy = f"deploy it first (`make deploy ENV={config.environment}`)"
    try:
        outputs = stack_outputs(config, name, deploy, cloudformation)
    except OutputsUnreadable as exc:
        raise unknown(exc.reason, exc.fix) from None
    if not outputs.get(WORKSPACE_ID_OUTPUT):
        raise unknown(f"the stack has no output {WORKSPACE_ID_OUTPUT}", deploy)
    return AmpWorkspace(outputs[WORKSPACE_ID_OUTPUT], config.region)
