"""Teardown in order: Kubernetes objects, then the stacks wave by wave (Lambda's network
interfaces and the VPC's leftovers before the network stack), then the leftovers."""

from __future__ import annotations

from botocore.exceptions import ClientError
from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from scripts.lib.clients import Clients
from scripts.lib.environment import network_stack, stack_waves
from scripts.lib.errors import OperationError
from scripts.lib.progress import Show
from scripts.lib.teardown.kubernetes import (
    _delete_endpoints,
    _delete_pvcs,
    eks_cluster_exists,
)
from scripts.lib.teardown.leftovers import (
    _release_lambda_enis,
    _sweep,
    account_leftovers,
    vpc_leftovers,
)
from scripts.lib.teardown.model import Log, Timeouts
from scripts.lib.teardown.stacks import _delete_wave


def execute_teardown(
    clients: Clients,
    cfg: AppConfig,
    log: Log,
    timeouts: Timeouts | None = None,
    *,
    show: Show,
) -> None:
    t = timeouts or Timeouts()
    try:
        # Read before the stacks go: the log groups their resources name.
        log_groups = {i.id for i in account_leftovers(clients, cfg) if i.kind == "log group"}
        if eks_cluster_exists(clients, cfg):
            _delete_endpoints(clients, cfg, t, log, show)
            _delete_pvcs(clients, cfg, t, log, show)
        else:
            log("EKS cluster not found: Kubernetes phase skipped")
        for wave in stack_waves(cfg):
            if network_stack(cfg) in wave:
                _release_lambda_enis(clients, cfg, t, log, show)
                _sweep(clients, vpc_leftovers(clients, cfg), t, log, show)
            _delete_wave(clients, wave, t, log, show)
        leftovers = vpc_leftovers(clients, cfg) + account_leftovers(clients, cfg, log_groups)
        _sweep(clients, leftovers, t, log, show)
    except ClientError as exc:
        raise OperationError(
            f"AWS: {exc}; fix and re-run teardown (finished steps are skipped)"
        ) from None
    except ApiException as exc:
        raise OperationError(
            f"Kubernetes API: {exc.status} {exc.reason}; re-run teardown"
        ) from None
