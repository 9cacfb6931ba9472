"""The one place where AWS and Kubernetes clients are created.

Every command receives a ``Clients`` object; tests build one whose AWS clients run against moto or
botocore's Stubber and whose Kubernetes ``ApiClient`` points at a local fake API server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import yaml
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config import kube_config

from scripts.lib.errors import OperationError

AwsFactory = Callable[[str], Any]
KubeFactory = Callable[[], k8s.ApiClient]


def _default_kube(context: str | None, setup: str) -> KubeFactory:
    def build() -> k8s.ApiClient:
        # Why kubeconfig first: `aws eks update-kubeconfig` is how operators reach the cluster.
        try:
            return k8s_config.new_client_from_config(context=context)
        except k8s_config.ConfigException as exc:
            reason = " ".join(str(exc).split())[:120]
        except (yaml.YAMLError, TypeError, AttributeError, KeyError, ValueError) as exc:
            # A file the client parses but cannot use (a truncated or hand-edited kubeconfig):
            # its loader raises whatever the parse ran into.
            path = kube_config.KUBE_CONFIG_DEFAULT_LOCATION  # $KUBECONFIG or ~/.kube/config
            why = " ".join(str(exc).split())[:120]
            raise OperationError(
                f"the kubeconfig {path} is not one the Kubernetes client can read ({why}); "
                f"fix or move it, then run `{setup}`"
            ) from None
        try:
            k8s_config.load_incluster_config()
        except k8s_config.ConfigException:
            raise OperationError(
                f"no Kubernetes access: {reason}, and not running in a Pod; run `{setup}`"
                + (" or check --context" if context else "")
            ) from None
        return k8s.ApiClient()

    return build


class Clients:
    """Lazily created boto3 clients (one per service) and Kubernetes API groups."""

    def __init__(
        self,
        region: str,
        aws_factory: AwsFactory | None = None,
        kube_factory: KubeFactory | None = None,
        kube_context: str | None = None,
        kube_setup: str = "aws eks update-kubeconfig --name <cluster> --region <region>",
    ) -> None:
        self.region = region
        self._aws_factory = aws_factory or self._boto3_factory
        self._kube_factory = kube_factory or _default_kube(kube_context, kube_setup)
        self._aws: dict[str, Any] = {}
        self._api_client: k8s.ApiClient | None = None
        self._session: boto3.Session | None = None

    def _boto3_factory(self, service: str) -> Any:
        if self._session is None:
            self._session = boto3.Session(region_name=self.region)
        return self._session.client(service)

    def aws(self, service: str) -> Any:
        if service not in self._aws:
            self._aws[service] = self._aws_factory(service)
        return self._aws[service]

    @property
    def api_client(self) -> k8s.ApiClient:
        if self._api_client is None:
            self._api_client = self._kube_factory()
        return self._api_client

    def core(self) -> k8s.CoreV1Api:
        return k8s.CoreV1Api(self.api_client)

    def apps(self) -> k8s.AppsV1Api:
        return k8s.AppsV1Api(self.api_client)

    def storage(self) -> k8s.StorageV1Api:
        return k8s.StorageV1Api(self.api_client)

    def custom(self) -> k8s.CustomObjectsApi:
        return k8s.CustomObjectsApi(self.api_client)

    def to_dict(self, obj: Any) -> Any:
        """A typed Kubernetes model as the plain dict the API server sent (camelCase keys)."""
        return self.api_client.sanitize_for_serialization(obj)
