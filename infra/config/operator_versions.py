"""Which inference operator each pinned ``amazon-sagemaker-hyperpod-inference`` add-on ships, and
what that operator accepts.

One table, read by the config rules (model sources) and by the tests (each rendered
InferenceEndpointConfig validates against the CRD of the operator its config pins). The CRD copies
and their sources (repository, path, commit, SHA-256) are in k8s/schemas/SOURCES.md. The typed
classes in k8s/imports are generated from the newest CRD here; the per-version schema test is what
holds the rendered objects to the pinned one.

To pin another add-on version: list what EKS offers (``aws eks describe-addon-versions
--addon-name amazon-sagemaker-hyperpod-inference --kubernetes-version <minor>``), find the
operator it ships (AWS "SageMaker HyperPod Inference release notes"), copy that operator's CRD
(aws/sagemaker-hyperpod-cli ``helm_chart/HyperPodHelmChart/charts/inference-operator/config/crd/
inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml`` at the commit whose chart has
that ``appVersion``) into ``k8s/schemas/hyperpod-inference/<operator>/``, record it in SOURCES.md,
and add a row to ``ADDON_OPERATOR`` (and to ``OPERATORS`` for a new operator version).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from infra.config.errors import RuleViolation

ADDON_NAME = "amazon-sagemaker-hyperpod-inference"
# Where the add-on runs the operator (its chart's manager Deployment in ``<shortPrefix>-system``,
# sagemaker-hyperpod-cli helm_chart/HyperPodHelmChart/charts/inference-operator, values.yaml
# ``shortPrefix: hyperpod-inference``), with the ALB controller and KEDA it installs.
OPERATOR_NAMESPACE = "hyperpod-inference-system"
OPERATOR_DEPLOYMENT = "hyperpod-inference-controller-manager"
CRD_DIR = Path(__file__).resolve().parents[2] / "k8s" / "schemas" / "hyperpod-inference"
IEC_CRD = "inference.sagemaker.aws.amazon.com_inferenceendpointconfigs.yaml"


@dataclass(frozen=True)
class OperatorVersion:
    version: str
    """Operator release (the chart's ``appVersion``), e.g. ``3.0``."""
    chart: str
    """Version of the inference-operator Helm chart that ships it."""
    model_sources: tuple[str, ...]
    """``spec.modelSourceConfig.modelSourceType`` values its CRD accepts."""
    keeps_lmcache_env: bool
    """It passes the ``LMCACHE_*`` entries of ``worker.environmentVariables`` to the model
    container. When it does not, only the L2 admission policy's own variables reach LMCache
    (on curvine and fsx_lustre endpoints), and the others run on LMCache's defaults."""

    @property
    def crd_path(self) -> Path:
        """The InferenceEndpointConfig CRD of this operator (a copy; see SOURCES.md)."""
        return CRD_DIR / self.version / IEC_CRD


OPERATORS: dict[str, OperatorVersion] = {
    # chart 2.0.0, aws/sagemaker-hyperpod-cli commit 51b8dd2: modelSourceType enum fsx | s3
    "3.0": OperatorVersion("3.0", "2.0.0", ("s3", "fsx"), keeps_lmcache_env=True),
    # chart 2.2.2, commit 011ca92; huggingface and kubernetesVolume since chart 2.1.1 (v3.1)
    # It drops the user's LMCACHE_* worker variables (the user report on ADDON_OPERATOR's row).
    "3.2": OperatorVersion(
        "3.2", "2.2.2", ("s3", "fsx", "huggingface", "kubernetesVolume"), keeps_lmcache_env=False
    ),
    # chart 2.3.0, commit 0986f2c: 3.2's CRD plus spec.modelCacheConfig (image and weights cache),
    # loadBalancer.idleTimeoutSeconds and status.imageCacheStatus; kvCacheSpec unchanged. No
    # add-on version is known to ship it (ADDON_OPERATOR): the tests hold what the app renders
    # under the pin to this CRD too, so the add-on can move under it. Nothing on record says the
    # LMCACHE_* stripping changed since 3.2.
    "3.3": OperatorVersion(
        "3.3", "2.3.0", ("s3", "fsx", "huggingface", "kubernetesVolume"), keeps_lmcache_env=False
    ),
}

ADDON_OPERATOR: dict[str, str] = {
    # EKS add-on integration arrived with operator 3.0 (AWS release notes, v3.0); the chart's
    # migration script (helm_to_addon.sh, commit 9ffefae) installs this add-on version.
    "v1.0.0-eksbuild.1": "3.0",
    # Runs image hyperpod-inference-operator:v3.2.0: a user report on aws/sagemaker-hyperpod-cli
    # ("Inference Operator v3.2.0 ignores l2CacheBackend: redis", 2026-06-21) lists this add-on
    # version as the newest EKS offered, and the pod it rendered. Operator 3.2 drops the user's
    # LMCACHE_* worker variables and always injects its sagemaker-hyperpod:// URL; the L2
    # admission policy writes every variable L2 needs, so nothing is lost (test_l2_mutation).
    "v1.3.0-eksbuild.1": "3.2",
}


def operator_for_addon(addon_version: str) -> OperatorVersion:
    """The operator a pinned add-on version ships; refuses a version the table does not know."""
    op = ADDON_OPERATOR.get(addon_version)
    if op is None:
        raise RuleViolation(
            f"an add-on version whose operator is known ({', '.join(ADDON_OPERATOR)})",
            f"check it is offered (aws eks describe-addon-versions --addon-name {ADDON_NAME} "
            "--kubernetes-version <minor>), copy the CRD of the operator it ships into "
            "k8s/schemas/hyperpod-inference/<operator>/ and add it to ADDON_OPERATOR in "
            "infra/config/operator_versions.py",
        )  # raised in the version's validator, which reports the field and its value
    return OPERATORS[op]
