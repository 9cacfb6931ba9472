"""Rules on the names the app gives what it deploys: the namespaces it creates (none of the
platform's) and the SageMaker endpoint each endpoint names (unique per account and Region)."""

from __future__ import annotations

from infra.config.errors import RuleViolation
from infra.config.kvcache import KvCacheConfig
from infra.config.model import AppConfig, sagemaker_endpoint_name, sagemaker_model_name
from infra.config.operator_versions import OPERATOR_NAMESPACE

# SageMaker's longest endpoint name (CreateEndpoint's EndpointName; the CRD's endpointName).
SAGEMAKER_NAME_MAX = 63
# Namespaces the cluster or its platform add-ons own. The app renders, fences with a
# NetworkPolicy, binds its endpoint admission policy in and (on destroy) deletes the namespaces
# of its endpoints, Kyverno and Curvine: none of them may be one of these.
PLATFORM_NAMESPACES = {
    "default": "Kubernetes' own",
    "kube-system": "Kubernetes' own, with the VPC CNI, kube-proxy, CoreDNS and the CSI drivers",
    "kube-public": "Kubernetes' own",
    "kube-node-lease": "Kubernetes' own",
    OPERATOR_NAMESPACE: "the inference operator add-on's, with its ALB controller and KEDA",
    "aws-hyperpod": "HyperPod's health-monitoring agent's",
    "cert-manager": "the cert-manager add-on's",
    "amazon-guardduty": "GuardDuty's runtime monitoring agent's",
}


def _platform_namespace(namespace: str) -> str | None:
    """Who owns ``namespace`` when the platform does (``kube-`` is Kubernetes' prefix)."""
    if namespace in PLATFORM_NAMESPACES:
        return PLATFORM_NAMESPACES[namespace]
    return "Kubernetes' (the kube- prefix)" if namespace.startswith("kube-") else None


def check_namespaces(kv: KvCacheConfig) -> None:
    """The app's own namespaces are none of the platform's, and endpoints share none with
    Kyverno or Curvine (privileged Pods there would meet the endpoints' admission policy)."""
    own = {kv.kyverno.namespace: "Kyverno's"} if kv.uses_kyverno else {}
    if "curvine" in kv.l2_backends:
        own[kv.curvine.namespace] = "Curvine's"
    for i, e in enumerate(kv.endpoints):
        owner = _platform_namespace(e.namespace) or own.get(e.namespace)
        if owner is not None:
            raise RuleViolation(
                f"a namespace of the endpoints' own, not {owner}",
                f"set kvcache.endpoints.{i}.namespace to another name, e.g. inference",
                field=f"kvcache.endpoints.{i}.namespace",
                value=e.namespace,
            )
    rendered = [("curvine", kv.curvine.namespace)] if "curvine" in kv.l2_backends else []
    if kv.installs_kyverno:  # an installed Kyverno's namespace is the cluster's, not rendered
        rendered.append(("kyverno", kv.kyverno.namespace))
    for field, namespace in rendered:
        owner = _platform_namespace(namespace)
        if owner is not None:
            raise RuleViolation(
                f"a namespace of its own, not {owner}",
                f"set kvcache.{field}.namespace to {field}",
                field=f"kvcache.{field}.namespace",
                value=namespace,
            )


def check_endpoint_names(app: AppConfig) -> None:
    """Each endpoint names a SageMaker endpoint and model, each unique per account and Region
    whatever its namespace: one name twice in an environment is refused, and the
    environment-qualified name (``sagemaker_endpoint_name``, ``sagemaker_model_name``) must fit
    SageMaker's 63 characters. (Another environment of the account or a name taken outside this
    app: ``hpkv preflight`` asks SageMaker.)"""
    seen: dict[str, int] = {}
    for i, e in enumerate(app.kvcache.endpoints):
        if e.name in seen:
            first = app.kvcache.endpoints[seen[e.name]]
            raise RuleViolation(
                f"a name no other endpoint of the environment has (kvcache.endpoints."
                f"{seen[e.name]} in namespace {first.namespace} is {e.name}): each names a "
                "SageMaker endpoint, unique per account and Region",
                f"rename kvcache.endpoints.{i}.name",
                field=f"kvcache.endpoints.{i}.name",
                value=e.name,
            )
        seen[e.name] = i
        sagemaker = max(sagemaker_endpoint_name(app, e), sagemaker_model_name(app, e), key=len)
        if len(sagemaker) > SAGEMAKER_NAME_MAX:
            raise RuleViolation(
                f"at most {SAGEMAKER_NAME_MAX - len(app.environment) - 1} characters in "
                f"environment {app.environment}: the SageMaker endpoint and model {sagemaker} "
                f"may have {SAGEMAKER_NAME_MAX}",
                f"shorten kvcache.endpoints.{i}.name",
                field=f"kvcache.endpoints.{i}.name",
                value=e.name,
            )
