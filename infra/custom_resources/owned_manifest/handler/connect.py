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
    # Equivalent mutant: the STS client is made with region_name=None (the session's region, or the
    # global endpoint without one) instead of the token's region; token() only reads the client's
    # service_model.service_id ("STS"), which no region changes, and the signer is given the region
    # itself
    sts = session.client("sts", region_name=region)  # pragma: no mutate
    signer = RequestSigner(
        sts.meta.service_model.service_id, region, "sts", "v4",
        session.get_credentials(), session.events,
    )  # fmt: skip
    url = signer.generate_presigned_url(
        {
            # Equivalent mutant: method "get" instead of "GET"; the presigned URL does not carry the
            # method and SigV4's canonical request upper-cases it (botocore auth.canonical_request),
            # so the signature and URL are the same
            "method": "GET",  # pragma: no mutate
            "url": f"https://sts.{region}.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15",
            "body": {},
            # Equivalent mutant: the signed header is named "X-K8S-AWS-ID"; SigV4 lower-cases header
            # names in the canonical request and SignedHeaders, so the URL is the same (and HTTP
            # field names are case-insensitive, RFC 9110, for the header the verifier adds)
            "headers": {"x-k8s-aws-id": cluster_name},  # pragma: no mutate
            "context": {},
        },
        # Equivalent mutant: generate_presigned_url gets region_name=None; RequestSigner.sign then
        # uses the region the signer was built with, the same region, so the URL is the same
        region_name=region,  # pragma: no mutate
        expires_in=TOKEN_SECONDS,
        # Equivalent mutant: operation_name None instead of ""; botocore only uses it to name the
        # choose-signer and before-sign events, and it registers handlers for no STS operation but
        # AssumeRoleWithSAML and AssumeRoleWithWebIdentity, so neither name reaches one and the URL
        # is the same
        operation_name="",  # pragma: no mutate
    )
    # Equivalent mutant: strips "X" as well as "=" from the end of the base64; the URL's last byte
    # is a lower-case hex digit of X-Amz-Signature (botocore appends it last), and the last base64
    # character of such a byte is never "X" whatever the length, so nothing more is stripped
    return TOKEN_PREFIX + base64.urlsafe_b64encode(url.encode()).decode().rstrip(
        "="  # pragma: no mutate
    )  # pragma: no mutate


def api_client(session: Any, cluster_name: str) -> ApiClient:
    region = session.region_name or os.environ.get("AWS_REGION", "us-east-1")
    eks = session.client("eks", region_name=region)
    try:
        cluster = eks.describe_cluster(name=cluster_name)["cluster"]
    except ClientError as e:
        # Equivalent mutant: the default for a ClientError without "Error" becomes None; botocore's
        # error parsers always fill in "Error", so the default is never used
        if (
            e.response.get("Error", {}).get("Code")  # pragma: no mutate
            == "ResourceNotFoundException"  # pragma: no mutate
        ):  # pragma: no mutate
            raise ClusterGone(f"EKS cluster {cluster_name} does not exist in {region}") from e
        raise
    # Equivalent mutants: the CA file loses its ".crt" suffix; the kubernetes client hands
    # ssl_ca_cert to ssl as a path and nothing reads the name; delete=None instead of False;
    # NamedTemporaryFile only tests its truthiness, so the file is kept either way; mode "w+b" (the
    # default) instead of "wb"; the file is only written and closed, never read through this handle
    ca = tempfile.NamedTemporaryFile("wb", suffix=".crt", delete=False)  # noqa: SIM115  # pragma: no mutate
    with ca:
        ca.write(base64.b64decode(cluster["certificateAuthority"]["data"]))
    conf = Configuration()
    conf.host = cluster["endpoint"]
    conf.ssl_ca_cert = ca.name
    conf.api_key = {"BearerToken": token(session, cluster_name, region)}
    conf.api_key_prefix = {"BearerToken": "Bearer"}
    return ApiClient(conf)
