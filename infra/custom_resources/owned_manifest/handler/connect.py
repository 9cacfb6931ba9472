"""An API client for an EKS cluster from inside Lambda, without kubectl or a kubeconfig.

Endpoint and CA come from ``eks:DescribeCluster``; the bearer token is a presigned STS
``GetCallerIdentity`` URL carrying the ``x-k8s-aws-id`` header (what aws-iam-authenticator and
``aws eks get-token`` produce), so the cluster maps the function's role through its access entry.
"""

from __future__ import annotations

import base64
import os
import tempfile
from typing import Any

from botocore.exceptions import ClientError
from botocore.signers import RequestSigner
from kubernetes.client import ApiClient, Configuration

TOKEN_PREFIX = "k8s-aws-v1."
TOKEN_SECONDS = 60  # EKS accepts presigned URLs up to 15 minutes old; one apply takes seconds


class ClusterGone(Exception):
    """DescribeCluster says the cluster does not exist. On Create and Update it reaches
    CloudFormation as the failure reason, so ``str(error)`` names the cluster and says why."""


def token(session: Any, cluster_name: str, region: str) -> str:
    sts = session.client("sts", region_name=region)
    signer = RequestSigner(
        sts.meta.service_model.service_id,
        region,
        "sts",
        "v4",
        session.get_credentials(),
        session.events,
    )
    url = signer.generate_presigned_url(
        {
            "method": "GET",
            "url": f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            "headers": {"x-k8s-aws-id": cluster_name},
            "context": {},
        },
        region_name=region,
        expires_in=TOKEN_SECONDS,
        operation_name="",
    )
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip("=")


def api_client(session: Any, cluster_name: str) -> ApiClient:
    region = session.region_name or os.environ.get("AWS_REGION", "us-east-1")
    eks = session.client("eks", region_name=region)
    try:
        cluster = eks.describe_cluster(name=cluster_name)["cluster"]
    except ClientError as e:
        if e.response.get("Error", {}).get("Code") == "ResourceNotFoundException":
            raise ClusterGone(f"EKS cluster {cluster_name} does not exist in {region}") from e
        raise
    ca = tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False)  # noqa: SIM115
    with ca:
        ca.write(base64.b64decode(cluster["certificateAuthority"]["data"]))
    conf = Configuration()
    conf.host = cluster["endpoint"]
    conf.ssl_ca_cert = ca.name
    conf.api_key = {"BearerToken": token(session, cluster_name, region)}
    conf.api_key_prefix = {"BearerToken": "Bearer"}
    return ApiClient(conf)
