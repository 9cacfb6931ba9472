"""Type names shared by constructs that take an EKS cluster."""

from __future__ import annotations

from typing import cast

from aws_cdk import aws_eks_v2 as eks

# jsii's generated ``Cluster`` does not satisfy the ``ICluster`` protocol for mypy (it lacks the
# ``kubectl_provider_options`` member), although it implements the interface at run time.
AnyCluster = eks.ICluster | eks.Cluster


def as_icluster(cluster: AnyCluster) -> eks.ICluster:
    """Pass a cluster where CDK's signatures ask for ``ICluster`` (see ``AnyCluster``)."""
    return cast(eks.ICluster, cluster)
