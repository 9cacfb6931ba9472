"""One InferenceEndpointConfig per configured endpoint, from the classes `cdk8s import` generated
from the operator's CRD (k8s/imports/)."""

from __future__ import annotations

import cdk8s
from constructs import Construct

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from infra.config.model import sagemaker_endpoint_name, sagemaker_model_name
from infra.environment.amp_workspace import AmpWorkspace
from k8s.autoscaling import autoscaling_spec
from k8s.imports.hyperpod_inference.com.amazon.aws.sagemaker import inference as ie
from k8s.l2_pod import endpoint_env
from k8s.names import labels

MODEL_VOLUME, MODEL_PATH = "model-weights", "/opt/ml/model"
L = ie.InferenceEndpointConfigSpecWorkerResourcesLimits
R = ie.InferenceEndpointConfigSpecWorkerResourcesRequests


def _source(
    config: AppConfig, e: EndpointConfig
) -> ie.InferenceEndpointConfigSpecModelSourceConfig:
    m = e.model
    if m.source == "s3":
        return ie.InferenceEndpointConfigSpecModelSourceConfig(
            model_source_type=ie.InferenceEndpointConfigSpecModelSourceConfigModelSourceType.S3,
            s3_storage=ie.InferenceEndpointConfigSpecModelSourceConfigS3Storage(
                bucket_name=m.s3_bucket or "",
                region=config.region,
            ),
            model_location=m.s3_prefix or None,
        )
    return ie.InferenceEndpointConfigSpecModelSourceConfig(
        model_source_type=ie.InferenceEndpointConfigSpecModelSourceConfigModelSourceType.HUGGINGFACE,
        hugging_face_model=ie.InferenceEndpointConfigSpecModelSourceConfigHuggingFaceModel(
            model_id=m.hugging_face_model_id
        ),
    )


def _spec(
    config: AppConfig, e: EndpointConfig, workspace: AmpWorkspace | None
) -> ie.InferenceEndpointConfigSpec:
    gpus = e.tensor_parallel_size
    amounts: dict[str, str | int] = {
        "cpu": str(e.cpu),
        "memory": f"{e.memory_gib}Gi",
        "nvidia.com/gpu": gpus,
    }
    limits = {
        k: L.from_string(v) if isinstance(v, str) else L.from_number(v) for k, v in amounts.items()
    }
    requests = {
        k: R.from_string(v) if isinstance(v, str) else R.from_number(v) for k, v in amounts.items()
    }
    env = [
        ie.InferenceEndpointConfigSpecWorkerEnvironmentVariables(name=k, value=v)
        for k, v in endpoint_env(config, e)
    ]
    args = [
        "--model",
        MODEL_PATH,
        "--port",
        str(e.container_port),
        "--tensor-parallel-size",
        str(gpus),
        *e.args,
    ]
    l2 = e.l2_backend != "none"
    scaling = None
    if e.autoscaling is not None:
        if workspace is None:
            raise ValueError(f"endpoint {e.name} autoscales: its chart needs the AMP workspace")
        scaling = autoscaling_spec(config, e, e.autoscaling, workspace)
    return ie.InferenceEndpointConfigSpec(
        model_name=sagemaker_model_name(config, e),
        endpoint_name=sagemaker_endpoint_name(config, e),
        instance_type=e.instance_type or config.hyperpod.gpu_group.instance_type,
        # With autoscaling: the count it starts with; KEDA moves it within the bounds.
        replicas=e.replicas,
        auto_scaling_spec=scaling,
        model_source_config=_source(config, e),
        worker=ie.InferenceEndpointConfigSpecWorker(
            image=e.image,
            args=args,
            environment_variables=env,
            model_invocation_port=ie.InferenceEndpointConfigSpecWorkerModelInvocationPort(
                container_port=e.container_port, name="http"
            ),
            model_volume_mount=ie.InferenceEndpointConfigSpecWorkerModelVolumeMount(
                name=MODEL_VOLUME, mount_path=MODEL_PATH
            ),
            resources=ie.InferenceEndpointConfigSpecWorkerResources(
                limits=limits, requests=requests
            ),
        ),
        kv_cache_spec=ie.InferenceEndpointConfigSpecKvCacheSpec(
            enable_l1_cache=e.enable_l1_cache,
            enable_l2_cache=l2,
            # Only redis or tieredstorage pass the CRD; the policy repoints L2 at Curvine.
            l2_cache_spec=ie.InferenceEndpointConfigSpecKvCacheSpecL2CacheSpec(
                l2_cache_backend="tieredstorage"
            )
            if l2
            else None,
        ),
        intelligent_routing_spec=ie.InferenceEndpointConfigSpecIntelligentRoutingSpec(
            enabled=True,
            routing_strategy=ie.InferenceEndpointConfigSpecIntelligentRoutingSpecRoutingStrategy[
                e.routing_strategy.upper()
            ],
        ),
        load_balancer=ie.InferenceEndpointConfigSpecLoadBalancer(health_check_path="/health"),
        metrics=ie.InferenceEndpointConfigSpecMetrics(
            enabled=True,
            model_metrics=ie.InferenceEndpointConfigSpecMetricsModelMetrics(
                path="/metrics", port=e.metrics_port
            ),
        ),
    )


class EndpointsChart(cdk8s.Chart):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        config: AppConfig,
        workspace: AmpWorkspace | None = None,
    ):
        """``workspace``: the observability AMP workspace, required when an endpoint
        autoscales (the CDK app passes its tokens, ``k8s.render`` the deployed id)."""
        super().__init__(scope, id, disable_resource_name_hashes=True)
        for e in config.kvcache.endpoints:
            ie.InferenceEndpointConfig(
                self,
                f"{e.namespace}-{e.name}",
                metadata=cdk8s.ApiObjectMetadata(
                    name=e.name,
                    namespace=e.namespace,
                    labels=labels(e.name, "endpoint"),
                ),
                spec=_spec(config, e, workspace),
            )
