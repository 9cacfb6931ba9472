"""What teardown would delete now, in order: the plan a dry run lists."""

from __future__ import annotations

from kubernetes.client.exceptions import ApiException

from infra.config import AppConfig
from scripts.lib.clients import Clients
from scripts.lib.environment import stack_names
from scripts.lib.teardown.kubernetes import (
    _curvine_pvcs,
    _endpoints,
    eks_cluster_exists,
)
from scripts.lib.teardown.leftovers import (
    account_leftovers,
    lambda_enis,
    vpc_leftovers,
)
from scripts.lib.teardown.model import Item, Plan
from scripts.lib.teardown.stacks import stack_status


def plan_teardown(clients: Clients, cfg: AppConfig) -> Plan:
    plan = Plan()
    if eks_cluster_exists(clients, cfg):
        try:
            endpoints, notes = _endpoints(clients, cfg)
            pvcs, more = _curvine_pvcs(clients, cfg)
            plan.kubernetes = endpoints + pvcs
            plan.notes = notes + more
        except (ApiException, OSError) as exc:
            plan.notes.append(
                f"Kubernetes API not reachable ({exc}); its objects go with the stacks"
            )
    else:
        plan.notes.append("EKS cluster not found: skipping the Kubernetes phase")
    for name in stack_names(cfg):
        status = stack_status(clients, name)
        if status is not None:
            plan.stacks.append(Item("stack", name, status))
    # Available Lambda ENIs are among the VPC leftovers; the in-use ones are waited for.
    busy = [
        Item("Lambda ENI", e["NetworkInterfaceId"], f"{e['Status']}: deleted once Lambda frees it")
        for e in lambda_enis(clients, cfg)
        if e["Status"] != "available"
    ]
    plan.leftovers = vpc_leftovers(clients, cfg) + busy + account_leftovers(clients, cfg)
    return plan
