"""The stacks of one environment and which stack waits for which: the one place both the app
(``stacks.composition``) and the operations CLI (``scripts.lib.teardown``) read the order from.

Light on purpose (no aws_cdk import): teardown plans its deletion waves from it without loading
CDK. Each stack lists the stacks it needs; anything not listed runs side by side:

    network -> eks ----> hyperpod -> nodes -----------> addons ------\\
        \\---> egress -/          |      \\-> kvcache -----------------+-> endpoints
                                 |-> observability -> (addons) -----+
                                 \\-> tiered-storage ---------------/

A stack that is not part of a mode (network, egress and eks on an existing cluster, egress on an
existing VPC, addons when no add-on is managed, observability when it is off) is dropped; its own
dependencies pass through to its dependents.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from infra.config import AppConfig

# Resource metadata naming the resources of other stacks a resource waits for (infra.cdk.deps.needs
# writes it, tools/deploy_time/model.py reads it).
NEEDS_METADATA = "hyperpod-kvcache:needs"

# suffix -> the suffixes it depends on (deploy order: a stack after everything it lists)
STACK_DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "network": (),
    "eks": ("network",),
    # The NAT gateways and the private subnets' default routes: the control plane does not need
    # them, the HyperPod nodes and the kubectl handler (in the private subnets) do.
    "egress": ("network",),
    # The HyperPod cluster, its prerequisites, the dependencies chart and the Tiered Storage and
    # node gate providers (built while the cluster is created).
    "hyperpod": ("network", "eks", "egress"),
    # The node readiness gate and CoreDNS: what everything that runs Pods waits for.
    "nodes": ("hyperpod",),
    # The Tiered Storage custom resource (UpdateCluster): only the endpoints wait for it.
    "tiered-storage": ("hyperpod",),
    # The AMP workspace, its collector and alerts.
    "observability": ("hyperpod",),
    # KEDA's role (add-ons) may query the observability workspace only; autoscaled endpoints
    # name it in their serverAddress.
    "addons": ("hyperpod", "nodes", "observability"),
    "kvcache": ("hyperpod", "nodes"),
    "endpoints": ("addons", "kvcache", "tiered-storage", "observability"),
}
STACK_SUFFIXES: tuple[str, ...] = tuple(STACK_DEPENDENCIES)  # one valid deploy order


def stack_name(config: AppConfig, suffix: str) -> str:
    """The CloudFormation name of the environment's stack ``suffix``: the same whether the CLI
    or a pipeline Stage deploys it, so teardown, verify and the output readers find it."""
    if suffix not in STACK_DEPENDENCIES:
        raise ValueError(f"unknown stack suffix {suffix!r}; known: {', '.join(STACK_SUFFIXES)}")
    return f"{config.stack_prefix}-{suffix}"


def dependencies(present: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The graph restricted to the stacks of one mode; a dropped stack's own dependencies pass
    through to its dependents."""
    keep = set(present)
    unknown = keep - set(STACK_DEPENDENCIES)
    if unknown:
        raise ValueError(f"unknown stack suffixes: {sorted(unknown)}")

    def through(suffix: str) -> set[str]:
        out: set[str] = set()
        for dep in STACK_DEPENDENCIES[suffix]:
            out |= {dep} if dep in keep else through(dep)
        return out

    return {s: tuple(sorted(through(s))) for s in STACK_SUFFIXES if s in keep}


def deletion_waves(present: Iterable[str]) -> list[list[str]]:
    """Stacks grouped so that each group can be deleted in parallel once the groups before it
    are gone: a stack goes only after every stack that depends on it."""
    graph = dependencies(present)
    dependents = {s: {d for d, deps in graph.items() if s in deps} for s in graph}
    waves: list[list[str]] = []
    done: set[str] = set()
    while len(done) < len(graph):
        wave = [s for s in graph if s not in done and dependents[s] <= done]
        waves.append(wave)
        done |= set(wave)
    return waves
