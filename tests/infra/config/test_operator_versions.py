"""The inference add-on pin: the table (add-on version -> operator -> CRD) and the rules that
follow from it, as the one line a user sees. No double: the shipped config files, parsed."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from infra.config import ConfigError, parse_config
from infra.config import operator_versions as ov
from infra.config.kvcache import PLACEHOLDER_MODEL_BUCKET
from infra.config.loader import CONFIG_DIR
from infra.config.model import model_bucket_names

SOURCE = "config/test.yaml"


@pytest.fixture
def raw() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CONFIG_DIR / "test.yaml").read_text())
    return copy.deepcopy(data)


def refusal(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(raw, SOURCE, "test")
    message = str(info.value)
    assert "\n" not in message
    return message


def test_the_shipped_pin_is_add_on_v1_3_0_with_operator_3_2_and_its_crd(
    raw: dict[str, Any],
) -> None:
    addon = parse_config(raw, SOURCE, "test").addons.inference_operator
    op = addon.operator
    assert addon.version == "v1.3.0-eksbuild.1"
    assert (op.version, op.chart) == ("3.2", "2.2.2")
    assert op.model_sources == ("s3", "fsx", "huggingface", "kubernetesVolume")
    assert op.crd_path.is_file() and op.crd_path.parent.name == "3.2"


def test_add_on_v1_0_0_still_pins_operator_3_0(raw: dict[str, Any]) -> None:
    raw["addons"] = {"inference_operator": {"version": "v1.0.0-eksbuild.1"}}
    op = parse_config(raw, SOURCE, "test").addons.inference_operator.operator
    assert (op.version, op.chart, op.model_sources) == ("3.0", "2.0.0", ("s3", "fsx"))
    assert op.crd_path.parent.name == "3.0"


def test_huggingface_with_the_shipped_pin_is_accepted(raw: dict[str, Any]) -> None:
    raw["kvcache"]["endpoints"][0]["model"] = {
        "source": "huggingface",
        "hugging_face_model_id": "Qwen/Qwen3-8B",
    }
    endpoint = parse_config(raw, SOURCE, "test").kvcache.endpoints[0]
    assert endpoint.model.source == "huggingface"


def test_huggingface_under_operator_3_0_is_refused_at_synth(raw: dict[str, Any]) -> None:
    raw["addons"] = {"inference_operator": {"version": "v1.0.0-eksbuild.1"}}
    raw["kvcache"]["endpoints"][0]["model"] = {"source": "huggingface"}
    # Only what the app renders and operator 3.0 takes: fsx is the operator's, not the app's.
    assert refusal(raw) == (
        "config/test.yaml: kvcache.endpoints.0.model.source = 'huggingface': allowed: s3 (model "
        "sources of operator 3.0, shipped by the pinned add-on v1.0.0-eksbuild.1); fix: "
        "use source s3 with model.s3_bucket (stage the weights with aws s3 sync, see "
        "docs/kubernetes-layer.md), or pin an add-on version shipping operator 3.1+ after "
        "checking `aws eks describe-addon-versions --addon-name "
        "amazon-sagemaker-hyperpod-inference --kubernetes-version 1.34` and adding its CRD "
        "(infra/config/operator_versions.py)"
    )


def test_huggingface_is_accepted_once_the_table_maps_the_pin_to_3_2(
    raw: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rule reads the table: an add-on row pointing at operator 3.2 admits huggingface."""
    monkeypatch.setitem(ov.ADDON_OPERATOR, "v9.9.9-eksbuild.1", "3.2")
    raw["addons"] = {"inference_operator": {"version": "v9.9.9-eksbuild.1"}}
    raw["kvcache"]["endpoints"][0]["model"] = {"source": "huggingface"}
    cfg = parse_config(raw, SOURCE, "test")
    assert cfg.addons.inference_operator.operator.version == "3.2"


def test_an_add_on_version_missing_from_the_table_is_refused(raw: dict[str, Any]) -> None:
    raw["addons"] = {"inference_operator": {"version": "v1.1.0-eksbuild.1"}}
    assert refusal(raw) == (
        "config/test.yaml: addons.inference_operator.version = 'v1.1.0-eksbuild.1': allowed: an "
        "add-on version whose operator is known (v1.0.0-eksbuild.1, v1.3.0-eksbuild.1); fix: "
        "check it is offered "
        "(aws eks describe-addon-versions --addon-name amazon-sagemaker-hyperpod-inference "
        "--kubernetes-version <minor>), copy the CRD of the operator it ships into "
        "k8s/schemas/hyperpod-inference/<operator>/ and add it to ADDON_OPERATOR in "
        "infra/config/operator_versions.py"
    )


def test_the_refusal_lists_every_known_add_on_version(
    raw: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(ov.ADDON_OPERATOR, "v9.9.9-eksbuild.1", "3.2")
    raw["addons"] = {"inference_operator": {"version": "v1.1.0-eksbuild.1"}}
    known = "(v1.0.0-eksbuild.1, v1.3.0-eksbuild.1, v9.9.9-eksbuild.1)"
    assert f"allowed: an add-on version whose operator is known {known}; fix:" in refusal(raw)


@pytest.mark.parametrize(
    ("model", "field", "value"),
    [
        ({"s3_bucket": "arn:aws:s3:::weights"}, "s3_bucket", "arn:aws:s3:::weights"),
        ({"s3_bucket": None}, "s3_bucket", None),
        ({"s3_prefix": "s3://weights/qwen"}, "s3_prefix", "s3://weights/qwen"),
    ],
)
def test_s3_model_fields(
    raw: dict[str, Any], model: dict[str, Any], field: str, value: Any
) -> None:
    raw["kvcache"]["endpoints"][0]["model"].update(model)
    message = refusal(raw)
    shown = "(missing)" if value is None else repr(value)
    assert message.startswith(f"config/test.yaml: kvcache.endpoints.0.model.{field} = {shown}: ")


def test_every_s3_model_bucket_is_readable_by_the_s3_csi_role(raw: dict[str, Any]) -> None:
    """Added automatically: the driver's role reads the listed buckets plus the endpoints'."""
    raw["addons"] = {"s3_csi": {"model_bucket_names": ["team-weights"]}}
    raw["kvcache"]["endpoints"][0]["replicas"] = 1
    second = {
        "name": "other",
        "replicas": 1,
        "model": {"source": "s3", "s3_bucket": "team-weights"},
    }
    raw["kvcache"]["endpoints"].append(second)
    cfg = parse_config(raw, SOURCE, "test")
    assert model_bucket_names(cfg) == ("team-weights", PLACEHOLDER_MODEL_BUCKET)


def test_the_placeholder_bucket_cannot_be_registered_by_anyone() -> None:
    """S3 reserves the amzn-s3-demo- prefix for documentation: a config that keeps the
    placeholder fails to load weights rather than reading a stranger's bucket."""
    assert PLACEHOLDER_MODEL_BUCKET.startswith("amzn-s3-demo-")
