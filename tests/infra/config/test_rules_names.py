"""The names the app gives what it deploys (parsing, and the rendered charts for the endpoints'
SageMaker names; no double).

Namespaces the app renders as its own (the endpoints', Kyverno's, Curvine's): the app labels
them for Pod Security, binds the endpoints' baseline admission policy and an ingress
NetworkPolicy there, and deletes them on destroy. None of that may happen to a namespace the
cluster or a platform add-on owns. Endpoint names: each names a SageMaker endpoint."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import AppConfig, ConfigError, load_config, parse_config
from infra.config.loader import CONFIG_DIR
from k8s.app import build_charts
from scripts.lib.environment import cluster_names
from tests.support.config import EXISTING_GROUPS, SOURCE, env_raw, existing_cluster, refusal


def iecs(config: AppConfig) -> list[dict[str, Any]]:
    objs = [o for _, chart in build_charts(config).ordered for o in chart.to_json()]
    return [o for o in objs if o["kind"] == "InferenceEndpointConfig"]


# The cluster's and the platform add-ons' namespaces, as their owners name them: Kubernetes,
# the inference operator add-on (chart shortPrefix hyperpod-inference + "-system"), HyperPod's
# dependencies chart (health-monitoring agent), the cert-manager add-on, GuardDuty's agent.
PLATFORM = [
    "default",
    "kube-system",
    "kube-public",
    "kube-node-lease",
    "kube-anything",
    "hyperpod-inference-system",
    "aws-hyperpod",
    "cert-manager",
    "amazon-guardduty",
]


@pytest.mark.parametrize("namespace", PLATFORM)
def test_an_endpoint_in_a_platform_namespace_is_refused(namespace: str) -> None:
    field = "kvcache.endpoints.0.namespace"
    message = refusal({field: namespace})
    assert message is not None, f"an endpoint in {namespace} was accepted"
    assert message.startswith(f"{SOURCE}: {field} = {namespace!r}: allowed: a namespace of the")
    assert f"fix: set {field} to another name" in message


@pytest.mark.parametrize("namespace", PLATFORM)
@pytest.mark.parametrize("owner", ["kyverno", "curvine"])
def test_kyverno_or_curvine_in_a_platform_namespace_is_refused(owner: str, namespace: str) -> None:
    field = f"kvcache.{owner}.namespace"
    message = refusal({field: namespace})
    assert message is not None and message.startswith(f"{SOURCE}: {field} = {namespace!r}:")


def test_an_installed_kyvernos_namespace_is_not_the_apps_to_refuse() -> None:
    """With kyverno.install false the app renders no Kyverno namespace: the cluster's Kyverno
    lives where it lives."""
    overrides = {
        "kvcache.kyverno.install": False,
        "kvcache.kyverno.namespace": "kube-system",
    }
    message = refusal(overrides)
    # Refused for another reason only: this config creates its cluster (no Kyverno there).
    assert message is not None and "kvcache.kyverno.install = False" in message


def test_an_endpoint_in_kyvernos_namespace_is_refused() -> None:
    """Kyverno's Pods are not the endpoints': the endpoints' admission policy would judge them.
    (An endpoint in Curvine's namespace is refused on kvcache.curvine.namespace.)"""
    field = "kvcache.endpoints.0.namespace"
    message = refusal({field: "kyverno"})
    assert message is not None and message.startswith(f"{SOURCE}: {field} = 'kyverno':")


@pytest.mark.parametrize("installs", [True, False], ids=["app-installs", "cluster-has-one"])
def test_an_endpoint_in_the_namespace_of_an_installed_kyverno_is_refused_too(
    installs: bool,
) -> None:
    """On an existing cluster whose own Kyverno serves the L2 policy (``kyverno.install``
    false), its Pods are still not the endpoints': the admission policy bound in an endpoint
    namespace would judge Kyverno's own, and the app would fence and on destroy delete it."""
    overrides = {
        "existing_cluster": existing_cluster(),
        "kvcache.kyverno.install": installs,
        "kvcache.kyverno.namespace": "policy-engine",
    }
    assert refusal(overrides) is None
    field = "kvcache.endpoints.0.namespace"
    message = refusal({**overrides, field: "policy-engine"})
    assert message is not None and message.startswith(f"{SOURCE}: {field} = 'policy-engine':")


# --- endpoint names: each names a SageMaker endpoint, unique per account and Region ------------


def _two_endpoints(**second: Any) -> list[dict[str, Any]]:
    (first,) = env_raw()["kvcache"]["endpoints"]
    return [{**first, "replicas": 1}, {**first, "replicas": 1, **second}]


def test_one_endpoint_name_in_two_namespaces_is_refused() -> None:
    """Two InferenceEndpointConfigs may share a name across namespaces, two SageMaker
    endpoints may not."""
    message = refusal({"kvcache.endpoints": _two_endpoints(namespace="inference-b")})
    assert message is not None
    assert message.startswith(f"{SOURCE}: kvcache.endpoints.1.name = 'qwen3-8b': allowed:")


def test_two_endpoint_names_in_two_namespaces_are_accepted() -> None:
    both = _two_endpoints(namespace="inference-b", name="qwen3-8b-b")
    assert refusal({"kvcache.endpoints": both}) is None


@pytest.mark.parametrize("field", ["endpointName", "modelName"])
def test_each_environment_names_its_own_sagemaker_endpoint_and_model(field: str) -> None:
    """dev, test and prod ship one endpoint name in one account and Region: their SageMaker
    endpoints, and the models the operator creates for them, must still differ."""
    names = {
        env: {o["spec"][field] for o in iecs(load_config(env))} for env in ("dev", "test", "prod")
    }
    assert names == {"dev": {"dev-qwen3-8b"}, "test": {"test-qwen3-8b"}, "prod": {"prod-qwen3-8b"}}


def test_a_name_too_long_for_a_sagemaker_endpoint_is_refused_at_its_boundary() -> None:
    """SageMaker endpoint names have at most 63 characters; dev's is "dev-" + the name."""
    field = "kvcache.endpoints.0.name"
    assert refusal({field: "a" * 59}) is None
    message = refusal({field: "a" * 60})
    assert message is not None and message.startswith(f"{SOURCE}: {field} = {'a' * 60!r}:")


# --- names another environment of the account uses ----------------------------------------------

DEV_TEXT = (CONFIG_DIR / "dev.yaml").read_text()


def folder_with(tmp_path: Path, **configs: dict[str, Any]) -> Path:
    """A config folder: each environment's mapping as YAML."""
    for env, raw in configs.items():
        (tmp_path / f"{env}.yaml").write_text(yaml.safe_dump({**raw, "environment": env}))
    return tmp_path


def loaded(folder: Path, env: str) -> AppConfig | str:
    try:
        return load_config(env, folder, lock_dir=folder)
    except ConfigError as error:
        return str(error)


def dev_as_it_was() -> dict[str, Any]:
    """config/dev.yaml as it spelled its cluster names before they were derived."""
    raw = env_raw()
    raw["eks"]["cluster_name"] = raw["hyperpod"]["cluster_name"] = "hyperpod-kvcache-dev"
    return raw


def test_a_config_that_leaves_the_cluster_names_out_gets_its_environments() -> None:
    for env in ("dev", "test", "prod"):
        config = load_config(env)
        assert (config.eks.cluster_name, config.hyperpod.cluster_name) == (
            f"hyperpod-kvcache-{env}",
            f"hyperpod-kvcache-{env}",
        )


def test_a_copy_of_dev_yaml_with_only_the_environment_changed_names_its_own_clusters(
    tmp_path: Path,
) -> None:
    (tmp_path / "dev.yaml").write_text(DEV_TEXT)
    (tmp_path / "staging.yaml").write_text(
        DEV_TEXT.replace("environment: dev", "environment: staging")
    )
    staging = loaded(tmp_path, "staging")
    assert isinstance(staging, AppConfig), staging
    assert cluster_names(staging) == ("hyperpod-kvcache-staging", "hyperpod-kvcache-staging")
    assert isinstance(loaded(tmp_path, "dev"), AppConfig)


@pytest.mark.parametrize("key", ["eks", "hyperpod"])
def test_a_copy_that_keeps_the_others_cluster_name_is_refused_and_the_other_is_not(
    tmp_path: Path, key: str
) -> None:
    """The name <project>-dev is dev's: the copy is refused, dev still loads (and its teardown
    plans its own clusters)."""
    copy = env_raw()
    copy[key]["cluster_name"] = "hyperpod-kvcache-dev"
    folder = folder_with(tmp_path, dev=dev_as_it_was(), staging=copy)
    assert loaded(folder, "staging") == (
        f"config/staging.yaml: {key}.cluster_name = 'hyperpod-kvcache-dev': allowed: a name no "
        "other environment of account 111122223333 in us-west-2 uses: config/dev.yaml "
        f"(environment dev) has {'EKS' if key == 'eks' else 'HyperPod'} cluster "
        "hyperpod-kvcache-dev too, and each environment deploys, and tears down, what it names; "
        f"fix: remove {key}.cluster_name to take hyperpod-kvcache-staging (named after the "
        "environment), or write a name of this environment's own"
    )
    assert isinstance(loaded(folder, "dev"), AppConfig)


def test_a_name_neither_environment_is_named_after_is_refused_in_both(tmp_path: Path) -> None:
    raw = env_raw()
    raw["eks"]["cluster_name"] = "team-cluster"
    folder = folder_with(tmp_path, dev=raw, staging=raw)
    for env, other in (("dev", "staging"), ("staging", "dev")):
        line = loaded(folder, env)
        assert isinstance(line, str) and line.startswith(
            f"config/{env}.yaml: eks.cluster_name = 'team-cluster': "
        ), line
        assert f"config/{other}.yaml (environment {other})" in line


@pytest.mark.parametrize(
    ("change", "why"),
    [({"account": "444455556666"}, "another account"), ({"region": "eu-west-1"}, "another Region")],
)
def test_the_same_cluster_name_in_another_account_or_region_is_accepted(
    tmp_path: Path, change: dict[str, str], why: str
) -> None:
    copy = {**dev_as_it_was(), **change}
    if "region" in change:
        # dev's zones are us-west-2's
        copy["network"] = {
            "availability_zones": ["eu-west-1a", "eu-west-1b"],
            "hyperpod_subnet": {"az_id": "euw1-az1", "cidr": "10.1.0.0/16"},
        }
    folder = folder_with(tmp_path, dev=dev_as_it_was(), staging=copy)
    assert isinstance(loaded(folder, "staging"), AppConfig), why


def test_a_cluster_another_environment_attaches_to_is_not_created_again(tmp_path: Path) -> None:
    """team-eks is an existing cluster the other environment deploys into: creating a cluster of
    that name fails, and tearing it down would plan the other's cluster log group."""
    attached = env_raw()
    attached.pop("network")
    attached["existing_cluster"] = existing_cluster(eks_cluster_name="team-eks")
    attached["hyperpod"] = {**attached["hyperpod"], **EXISTING_GROUPS}
    creating = env_raw()
    creating["eks"]["cluster_name"] = "team-eks"
    folder = folder_with(tmp_path, shared=attached, mine=creating)
    line = loaded(folder, "mine")
    assert isinstance(line, str) and line.startswith(
        "config/mine.yaml: eks.cluster_name = 'team-eks'"
    )
    assert isinstance(loaded(folder, "shared"), AppConfig)


def test_two_environments_may_attach_to_one_existing_cluster(tmp_path: Path) -> None:
    """Each environment marks what it renders there with its own owner mark (teardown)."""
    attached = env_raw()
    attached.pop("network")
    attached["existing_cluster"] = existing_cluster()
    attached["hyperpod"] = {**attached["hyperpod"], **EXISTING_GROUPS}
    folder = folder_with(tmp_path, one=attached, two=attached)
    assert isinstance(loaded(folder, "one"), AppConfig)


def test_an_alert_topic_name_written_in_two_environments_is_refused(tmp_path: Path) -> None:
    raw = env_raw()
    raw["observability"]["alert_topic_name"] = "kv-alerts"
    folder = folder_with(tmp_path, dev=raw, staging=raw)
    line = loaded(folder, "staging")
    assert isinstance(line, str)
    assert line.startswith("config/staging.yaml: observability.alert_topic_name = 'kv-alerts'")
    assert "fix: remove observability.alert_topic_name to take hyperpod-kvcache-staging-" in line


def _with_github_role(role: str, create_provider: bool) -> dict[str, Any]:
    raw = env_raw()
    raw["pipeline"] = {
        "enabled": True,
        "connection_arn": "arn:aws:codeconnections:us-west-2:111122223333:connection/"
        "01234567-89ab-cdef-0123-456789abcdef",
        "repository": "team/hpkv",
        "test_environment": "staging",
        "github_actions": {"deploy_role_name": role, "create_oidc_provider": create_provider},
    }
    return raw


def test_an_iam_name_is_refused_in_another_region_of_the_account(tmp_path: Path) -> None:
    """IAM names are the account's, whatever the Region: a second deploy role of one name, or a
    second GitHub OIDC provider, fails."""
    first = _with_github_role("hpkv-deploy", create_provider=True)
    second = _with_github_role("hpkv-deploy", create_provider=False)
    folder = folder_with(tmp_path, prod=first, prod2=second)
    line = loaded(folder, "prod2")
    assert isinstance(line, str)
    assert line.startswith(
        "config/prod2.yaml: pipeline.github_actions.deploy_role_name = 'hpkv-deploy': allowed: "
        "a name no other environment of account 111122223333 uses"
    ), line
    other = _with_github_role("hpkv-deploy-2", create_provider=True)
    folder = folder_with(tmp_path, prod=first, prod2=other)
    line = loaded(folder, "prod2")
    assert isinstance(line, str)
    assert "pipeline.github_actions.create_oidc_provider = True" in line
    assert "fix: set it to false" in line
    fine = _with_github_role("hpkv-deploy-2", create_provider=False)
    folder = folder_with(tmp_path, prod=first, prod2=fine)
    assert isinstance(loaded(folder, "prod2"), AppConfig)


def test_a_config_of_the_folder_that_does_not_load_names_nothing(tmp_path: Path) -> None:
    (tmp_path / "dev.yaml").write_text(DEV_TEXT)
    (tmp_path / "broken.yaml").write_text("environment: broken\neks: [\n")
    (tmp_path / "folder.yaml").mkdir()
    assert isinstance(loaded(tmp_path, "dev"), AppConfig)


def test_a_derived_hyperpod_name_too_long_is_refused_naming_the_key() -> None:
    """HyperPod cluster names hold 63 characters; <project>-<environment> may hold 65."""
    raw = env_raw()
    raw["project"] = "p" * 31
    raw["environment"] = "e" * 32
    with pytest.raises(ConfigError) as refused:
        parse_config(raw, SOURCE)
    assert str(refused.value).startswith(f"{SOURCE}: hyperpod.cluster_name = (missing): ")
    raw["hyperpod"]["cluster_name"] = "short"
    assert parse_config(raw, SOURCE).hyperpod.cluster_name == "short"
