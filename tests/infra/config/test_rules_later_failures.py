"""Values that render and deploy but fail later: a metrics port vLLM does not serve /metrics on,
a model page's URL where the operator wants a Hugging Face id, an address without its prefix
length where EKS wants a CIDR, and a section the chosen mode ignores (pure parsing, no double).
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import ConfigError, parse_config
from tests.support.config import EXISTING_GROUPS, SOURCE, env_raw, existing_cluster, refusal

ENDPOINT = "kvcache.endpoints.0"


def test_a_metrics_port_other_than_vllms_own_is_refused() -> None:
    """vLLM mounts /metrics on its API server: the operator would scrape a closed port."""
    assert refusal({f"{ENDPOINT}.metrics_port": 9090}) == (
        f"{SOURCE}: {ENDPOINT}.metrics_port = 9090: allowed: 8000 (container_port): vLLM serves "
        "/metrics on the port it listens on; fix: remove metrics_port, or set it to "
        "container_port"
    )
    both = {f"{ENDPOINT}.container_port": 8080, f"{ENDPOINT}.metrics_port": 8080}
    assert refusal(both) is None


@pytest.mark.parametrize(
    ("value", "fix"),
    [
        ("https://huggingface.co/Qwen/Qwen3-8B", "write Qwen/Qwen3-8B:"),
        ("huggingface.co/Qwen/Qwen3-8B/", "write Qwen/Qwen3-8B:"),
        ("Qwen/Qwen3 8B", "write owner/name:"),
        ("-bad/name", "write owner/name:"),
    ],
)
def test_a_url_or_malformed_id_where_a_hugging_face_id_belongs_is_refused(
    value: str, fix: str
) -> None:
    field = f"{ENDPOINT}.model.hugging_face_model_id"
    message = refusal({f"{ENDPOINT}.model.source": "huggingface", field: value})
    assert message is not None and message.startswith(f"{SOURCE}: {field} = {value!r}: allowed:")
    assert f"fix: {fix}" in message


@pytest.mark.parametrize("value", ["Qwen/Qwen3-8B", "gpt2", "meta-llama/Llama-3.1-8B-Instruct"])
def test_a_hugging_face_id_is_accepted(value: str) -> None:
    overrides = {f"{ENDPOINT}.model.source": "huggingface"}
    assert refusal({**overrides, f"{ENDPOINT}.model.hugging_face_model_id": value}) is None


def test_an_address_without_its_prefix_length_is_refused_with_the_cidr_to_write() -> None:
    """ipaddress would read 203.0.113.5 as a /32 and the template would carry it as written."""
    field = "eks.public_access_cidrs"
    assert refusal({field: ["203.0.113.5"]}) == (
        f"{SOURCE}: {field} = ['203.0.113.5']: allowed: an IPv4 network in CIDR form with its "
        "prefix length, /0 to /32; fix: write 203.0.113.5/32 for one address (or the network's "
        f"own prefix) in {field}"
    )
    assert refusal({field: ["203.0.113.5/32"]}) is None


def test_a_network_section_beside_an_existing_cluster_is_refused() -> None:
    """The existing cluster's VPC is used: a network section would be ignored without a word."""
    message = refusal({"existing_cluster": existing_cluster(), "network.vpc_cidr": "10.0.0.0/16"})
    assert message is not None and message.startswith(f"{SOURCE}: network = ")
    assert "fix: remove the network section" in message


@pytest.mark.parametrize(
    "network",
    [{"nat_gateways": 1}, {"vpc_cidr": "10.192.0.0/16"}, "dev.yaml's"],
    ids=["a default value", "dev's CIDR, the default", "dev.yaml's whole section"],
)
def test_a_network_section_of_default_values_beside_an_existing_cluster_is_refused(
    network: dict[str, Any] | str,
) -> None:
    """dev.yaml's network section holds the defaults: a config copied from it for an existing
    cluster keeps a section nothing reads."""
    raw = env_raw()
    section = raw["network"] if network == "dev.yaml's" else network
    raw["existing_cluster"] = existing_cluster()
    raw["hyperpod"] = {**raw["hyperpod"], **EXISTING_GROUPS}
    raw["network"] = section
    with pytest.raises(ConfigError) as refused:
        parse_config(raw, SOURCE, "dev")
    assert str(refused.value).startswith(f"{SOURCE}: network = ")
    raw["network"] = {}
    assert parse_config(raw, SOURCE, "dev").existing_cluster is not None


@pytest.mark.parametrize(
    ("addon", "offered"),
    [("v1.0.0-eksbuild.1", "s3"), ("v1.3.0-eksbuild.1", "s3 or huggingface")],
)
def test_a_bad_model_source_is_offered_only_what_the_next_run_accepts(
    addon: str, offered: str
) -> None:
    """Operator 3.0 takes s3 and fsx, the app renders s3 and huggingface: s3 alone is both."""
    field = f"{ENDPOINT}.model.source"
    message = refusal({"addons.inference_operator.version": addon, field: "gcs"})
    assert message is not None and f"allowed: {offered} (model sources of operator" in message
    assert message.endswith(f"fix: set {field} to {offered}")
    for source in offered.split(" or "):
        assert refusal({"addons.inference_operator.version": addon, field: source}) is None
