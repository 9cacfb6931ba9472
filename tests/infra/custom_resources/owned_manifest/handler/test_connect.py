"""The owned-manifest handler's EKS connection
(infra/custom_resources/owned_manifest/handler/connect.py).

Doubles, and why:
- moto 5.2 (mock_aws) for DescribeCluster: the handler builds its own EKS client from the
  session, so moto answers the real request in the region the client was made for (a cluster in
  another region is not found, as on AWS) and answers ResourceNotFoundException for a missing
  cluster. moto makes up the endpoint and CA, so the test points the cluster's endpoint at the
  fake Kubernetes API in moto's backend and gives it a known CA.
- a local fake Kubernetes API server (tests/doubles/ownership_fake_kube.py) recording the
  Authorization header of each request, so the client is checked by what it sends where.
- botocore's Stubber for an EKS error other than a missing cluster (AccessDenied): moto does not
  check permissions.
The token is checked by recomputing its SigV4 signature here (an independent oracle), which is
the only way to see which cluster name it was signed for: the presigned URL names the signed
header but not its value.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, parse_qsl, quote, urlsplit

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from moto import mock_aws
from moto.core import DEFAULT_ACCOUNT_ID
from moto.eks.models import eks_backends

from infra.custom_resources.owned_manifest.handler import connect
from infra.custom_resources.owned_manifest.handler.cluster import Cluster
from infra.custom_resources.owned_manifest.handler.kinds import Ref
from tests.doubles.ownership_fake_kube import ApplyFakeKube

CLUSTER = "team-eks"
SECRET = "secret"
CA = b"-----BEGIN CERTIFICATE-----\nMIIC5zCCAc+gAwIBAgIBADAN\n-----END CERTIFICATE-----\n"
CURVINE = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "curvine"}}


class BearerFakeKube(ApplyFakeKube):
    """Also records the Authorization header of every GET."""

    def __init__(self) -> None:
        self.authorization: list[str | None] = []
        super().__init__()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        base: Any = super()._handler()
        fake = self

        class Handler(base):  # type: ignore[misc,valid-type]
            def do_GET(self) -> None:
                fake.authorization.append(self.headers.get("Authorization"))
                super().do_GET()

        return Handler


@pytest.fixture
def kube() -> Iterator[BearerFakeKube]:
    with BearerFakeKube() as fake:
        fake.put("/api/v1/namespaces", CURVINE)
        yield fake


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No region from the environment or a config file unless a test sets AWS_REGION."""
    for var in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    with mock_aws():
        yield


def session(region: str | None) -> boto3.session.Session:
    return boto3.session.Session(
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key=SECRET, region_name=region
    )


def eks_cluster(region: str, endpoint: str) -> None:
    """A cluster in moto, serving at ``endpoint`` with the CA ``CA``."""
    eks = session(region).client("eks")
    eks.create_cluster(
        name=CLUSTER,
        roleArn=f"arn:aws:iam::{DEFAULT_ACCOUNT_ID}:role/eks",
        resourcesVpcConfig={"subnetIds": ["subnet-1"]},
    )
    made = eks_backends[DEFAULT_ACCOUNT_ID][region].clusters[CLUSTER]
    made.endpoint = endpoint
    made.certificate_authority = {"data": base64.b64encode(CA).decode()}


def presigned_url(token: str) -> str:
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    raw = token.removeprefix("k8s-aws-v1.")
    return base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()


def signed_for(url: str, cluster: str) -> bool:
    """Whether ``url`` is a SigV4 presigned GET whose signed x-k8s-aws-id header is ``cluster``."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    signature = dict(query)["X-Amz-Signature"]
    query = sorted((k, v) for k, v in query if k != "X-Amz-Signature")
    params = dict(query)
    canonical = "\n".join(
        [
            "GET",
            "/",
            "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in query),
            f"host:{parts.netloc}",
            f"x-k8s-aws-id:{cluster}",
            "",
            params["X-Amz-SignedHeaders"],
            hashlib.sha256(b"").hexdigest(),
        ]
    )
    scope = params["X-Amz-Credential"].split("/", 1)[1]
    to_sign = "\n".join(
        [
            "AWS4-HMAC-SHA256",
            params["X-Amz-Date"],
            scope,
            hashlib.sha256(canonical.encode()).hexdigest(),
        ]
    )
    key = f"AWS4{SECRET}".encode()
    for part in scope.split("/"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest() == signature


def test_token_is_signed_for_the_cluster_name_in_the_region() -> None:
    url = presigned_url(connect.token(session("eu-west-1"), CLUSTER, "eu-west-1"))
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "sts.eu-west-1.amazonaws.com", "/")
    assert query["Action"] == "GetCallerIdentity" and query["Version"] == "2011-06-15"
    assert query["X-Amz-Expires"] == "60"
    assert query["X-Amz-SignedHeaders"] == "host;x-k8s-aws-id"
    assert query["X-Amz-Credential"].endswith("/eu-west-1/sts/aws4_request")
    assert signed_for(url, CLUSTER) and not signed_for(url, "other-eks")


@pytest.mark.parametrize(
    ("session_region", "env_region", "cluster_region"),
    [
        ("eu-west-1", None, "eu-west-1"),
        ("eu-west-1", "ap-southeast-2", "eu-west-1"),  # the session's region wins
        (None, "ap-southeast-2", "ap-southeast-2"),  # Lambda sets AWS_REGION
        (None, None, "us-east-1"),
    ],
)
def test_client_talks_to_the_clusters_endpoint_with_a_token_for_it(
    aws: None,
    kube: BearerFakeKube,
    monkeypatch: pytest.MonkeyPatch,
    session_region: str | None,
    env_region: str | None,
    cluster_region: str,
) -> None:
    if env_region:
        monkeypatch.setenv("AWS_REGION", env_region)
    eks_cluster(cluster_region, kube.url)
    client = connect.api_client(session(session_region), CLUSTER)
    assert Cluster(client).get(Ref.of(CURVINE)) == CURVINE
    [authorization] = kube.authorization
    assert authorization is not None and authorization.startswith("Bearer k8s-aws-v1.")
    url = presigned_url(authorization.removeprefix("Bearer "))
    assert urlsplit(url).netloc == f"sts.{cluster_region}.amazonaws.com"
    assert signed_for(url, CLUSTER)
    assert Path(client.configuration.ssl_ca_cert).read_bytes() == CA


def test_a_missing_cluster_is_cluster_gone_naming_it(aws: None) -> None:
    eks_cluster("us-east-1", "https://elsewhere.example")  # same name, another region
    with pytest.raises(connect.ClusterGone) as err:
        connect.api_client(session("eu-west-1"), CLUSTER)
    assert str(err.value) == "EKS cluster team-eks does not exist in eu-west-1"


def test_other_eks_errors_are_raised_as_they_are(monkeypatch: pytest.MonkeyPatch) -> None:
    s = session("eu-west-1")
    eks = s.client("eks")
    stub = Stubber(eks)
    stub.add_client_error(
        "describe_cluster",
        service_error_code="AccessDeniedException",
        service_message="not authorized to perform: eks:DescribeCluster",
        http_status_code=403,
        expected_params={"name": CLUSTER},
    )
    made: list[tuple[str, str | None]] = []

    def client(service: str, region_name: str | None = None) -> Any:
        made.append((service, region_name))
        return eks

    monkeypatch.setattr(s, "client", client)
    with stub, pytest.raises(ClientError) as err:
        connect.api_client(s, CLUSTER)
    assert err.value.response["Error"]["Code"] == "AccessDeniedException"
    assert made == [("eks", "eu-west-1")]
    stub.assert_no_pending_responses()


def test_token_is_a_presigned_get_caller_identity_for_the_cluster() -> None:
    session = boto3.session.Session(
        aws_access_key_id="AKIDEXAMPLE", aws_secret_access_key="secret", region_name="us-west-2"
    )
    token = connect.token(session, "team-eks", "us-west-2")
    assert token.startswith("k8s-aws-v1.") and "=" not in token
    raw = token.removeprefix("k8s-aws-v1.")
    url = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode()
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert parts.netloc == "sts.us-west-2.amazonaws.com"
    assert query["Action"] == ["GetCallerIdentity"]
    assert "x-k8s-aws-id" in query["X-Amz-SignedHeaders"][0].split(";")
    assert query["X-Amz-Expires"] == [str(connect.TOKEN_SECONDS)]
