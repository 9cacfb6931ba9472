"""preflight refuses a placeholder where the deploy needs a real value, from the config alone
(no AWS call), while the synth only warns: the shipped configs hold the placeholder."""

from __future__ import annotations

from infra.config.kvcache import PLACEHOLDER_MODEL_BUCKET
from scripts.lib.preflight.placeholders import check_placeholders
from tests.support.config import make_cfg

REAL = {"source": "s3", "s3_bucket": "team-weights"}
PLACEHOLDER = {"source": "s3", "s3_bucket": PLACEHOLDER_MODEL_BUCKET}


def _endpoints(*models: dict[str, str]) -> dict[str, object]:
    return {
        "endpoints": [{"name": f"e{i}", "replicas": 1, "model": m} for i, m in enumerate(models)]
    }


def test_an_endpoint_left_on_the_placeholder_beside_a_real_one_fails_alone() -> None:
    (check,) = check_placeholders(make_cfg(kvcache=_endpoints(REAL, PLACEHOLDER)))
    assert (check.stage, check.status) == ("model buckets: e1", "fail")
    assert "kvcache.endpoints.1.model.s3_bucket" in check.detail and check.fix


def test_every_endpoint_on_its_own_bucket_passes() -> None:
    (check,) = check_placeholders(make_cfg(kvcache=_endpoints(REAL, REAL)))
    assert check.status == "pass"


def test_an_endpoint_that_loads_from_hugging_face_needs_no_bucket() -> None:
    hf = {"source": "huggingface", "s3_bucket": PLACEHOLDER_MODEL_BUCKET}
    (check,) = check_placeholders(make_cfg(kvcache=_endpoints(hf)))
    assert check.status == "pass"
