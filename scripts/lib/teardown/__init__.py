"""Ordered, re-runnable teardown of one environment, then a sweep of what CloudFormation leaves.

Scope: only what this environment owns, found by exact names and exact tag values, never by a
substring or prefix of a name: the stacks named ``<stack_prefix>-<suffix>``; the configured
InferenceEndpointConfigs (``kvcache.endpoints``) and the Curvine PVCs in their namespaces, each only
when it carries our ownership labels and no other environment's ``hyperpod-kvcache/owner`` mark (on
an existing cluster, where every environment shares the labels, only with our own mark); log
groups whose names the stacks' own resources determine (read with ListStackResources, which also
answers for a deleted stack by its id for 90 days);
EC2 leftovers by the ``project`` and ``environment`` tags (or inside this environment's tagged VPC).

Order: InferenceEndpointConfigs (and wait until their load balancers are gone) -> PVCs on the
Curvine StorageClass (and wait until the CSI driver, which the kvcache stack takes, has deleted
their volumes) -> stacks in waves from infra/environment/layout.py (a stack after every stack that
depends on it; the stacks of one wave in parallel). Right before the wave that holds the network
stack: Lambda's network interfaces in the VPC (delete the available ones, wait for Lambda to free
the rest) -> the VPC sweep of available ENIs and GuardDuty's endpoints and security group. Then
log groups and retained EBS volumes. Each step looks at what exists now, so a re-run after a
failure skips what is already gone.

Every wait goes through ``scripts.lib.progress.wait_for``: a stack deletion (up to 90 minutes) shows
the elapsed time, the stack's status and its latest resource event, and a DELETE_FAILED names each
resource that failed to delete with CloudFormation's reason. One DELETE_FAILED is recovered in
place: a bucket of that stack that was not empty (an S3 access log delivered after the auto-delete
custom resource emptied it) is emptied and the stack's deletion retried once.
"""

from __future__ import annotations
