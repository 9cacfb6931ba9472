"""Rules on the names the app gives what it deploys: the namespaces it creates (none of the
platform's) and the SageMaker endpoint each endpoint names (unique per account and Region)."""

from __future__ import annotations

from infra.config.errors import RuleViolation
from infra.config.kvcache import KvCacheConfig
from infra.config.model import (
    AppConfig,
    sagemaker_endpoint_name,
    sagemaker_model_name,
    topic_name,
)
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


# What one environment names in its account and Region (or, for IAM, its whole account), with
# the key that sets each name: another environment of the same account must use other names,
# or its deploy fails late on a name taken, and `hpkv teardown` plans what the other owns.
_REGIONAL = "regional"
_ACCOUNT_WIDE = "account"
_GITHUB_OIDC = "the token.actions.githubusercontent.com OIDC provider"


def owned_names(app: AppConfig) -> dict[tuple[str, str], str]:
    """{(what, scope): the key that names it} for what this environment creates: its EKS and
    HyperPod clusters (an existing cluster's names are the cluster's own, and environments may
    share one), its alert topic and its GitHub deploy role and OIDC provider."""
    names: dict[tuple[str, str], str] = {}
    if app.existing_cluster is None:
        names[(f"EKS cluster {app.eks.cluster_name}", _REGIONAL)] = "eks.cluster_name"
        names[(f"HyperPod cluster {app.hyperpod.cluster_name}", _REGIONAL)] = (
            "hyperpod.cluster_name"
        )
    if app.observability.enabled:
        names[(f"SNS topic {topic_name(app)}", _REGIONAL)] = "observability.alert_topic_name"
    github = app.pipeline.github_actions
    if app.pipeline.enabled and github.deploy_role_name:
        role = f"IAM role {github.deploy_role_name}"
        names[(role, _ACCOUNT_WIDE)] = "pipeline.github_actions.deploy_role_name"
        if github.create_oidc_provider:
            names[(_GITHUB_OIDC, _ACCOUNT_WIDE)] = "pipeline.github_actions.create_oidc_provider"
    return names


def _clusters_used(app: AppConfig) -> set[str]:
    """The cluster names an environment deploys into, created or existing."""
    if app.existing_cluster is None:
        return {
            f"EKS cluster {app.eks.cluster_name}",
            f"HyperPod cluster {app.hyperpod.cluster_name}",
        }
    existing = app.existing_cluster
    return {
        f"EKS cluster {existing.eks_cluster_name}",
        f"HyperPod cluster {existing.hyperpod_cluster_name}",
    }


def derived_cluster_name(app: AppConfig) -> str:
    """What a cluster is called when the config leaves its name out: ``<project>-<environment>``."""
    return app.stack_prefix


def check_names_of_other_environments(app: AppConfig, others: list[tuple[str, AppConfig]]) -> None:
    """Refuse a name another environment's config in the same folder (same account, and same
    Region for regional names) creates, or a cluster it deploys into: a config copied with only
    ``environment:`` changed keeps the other's names. A cluster named after the other
    environment (``<project>-<other>``) is the other's; a name of neither is refused in both."""
    mine = owned_names(app)
    for source, other in others:
        if other.account != app.account:
            continue
        theirs = set(owned_names(other)) | {(c, _REGIONAL) for c in _clusters_used(other)}
        for (what, scope), key in mine.items():
            if scope == _REGIONAL and other.region != app.region:
                continue
            if (what, scope) not in theirs:
                continue
            if what.endswith(f" {derived_cluster_name(app)}"):
                continue  # the cluster named after this environment is this environment's
            where = f"account {app.account}" + (f" in {app.region}" if scope == _REGIONAL else "")
            written = what.rsplit(" ", 1)[-1] if what != _GITHUB_OIDC else True
            raise RuleViolation(
                f"a name no other environment of {where} uses: {source} (environment "
                f"{other.environment}) has {what} too, and each environment deploys, and "
                "tears down, what it names",
                _rename_fix(key, app),
                field=key,
                value=written,
            )


def _rename_fix(key: str, app: AppConfig) -> str:
    if key in ("eks.cluster_name", "hyperpod.cluster_name"):
        return (
            f"remove {key} to take {derived_cluster_name(app)} (named after the environment), "
            "or write a name of this environment's own"
        )
    if key == "observability.alert_topic_name":
        return f"remove {key} to take {app.stack_prefix}-kvcache-alerts, or write another name"
    if key == "pipeline.github_actions.create_oidc_provider":
        return "set it to false: IAM has one provider per URL and the other environment creates it"
    return f"write another {key} (IAM role names are unique per account)"
