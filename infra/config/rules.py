"""Rules that span config sections; each names the field to change (``RuleViolation(field=...)``).

The loader runs ``check_rules`` on a config whose every section validated, as pydantic would run a
model validator of ``AppConfig``; the lock file is checked after them (``infra/config/locks.py``).
"""

from __future__ import annotations

import math

from infra.config.addons import _WHY_REQUIRED, ADDON_KEYS, INFERENCE_REQUIRES
from infra.config.autoscaling import peak_replicas
from infra.config.errors import RuleViolation
from infra.config.hyperpod import ExistingClusterConfig, HyperPodConfig
from infra.config.kvcache import MODEL_SOURCES, VLLM_HOST_GIB, VLLM_HOST_GIB_PER_GPU, EndpointConfig
from infra.config.model import (
    AppConfig,
    creates_collector,
    l1_in_container_gib,
)
from infra.config.operator_versions import ADDON_NAME
from infra.config.rules_autoscaling import check_autoscaling
from infra.config.rules_bench import check_bench
from infra.config.rules_budget import check_node_budget
from infra.config.rules_curvine import check_curvine
from infra.config.rules_existing import check_existing_arns
from infra.config.rules_names import check_endpoint_names, check_namespaces
from infra.config.rules_network import check_network
from infra.facts.instances import GPU_INSTANCES


def check_rules(app: AppConfig) -> None:
    """Every cross-section rule, in the order a user fixes them: network and instance groups
    first, then the add-ons, the Kubernetes layer, the pipeline and observability."""
    check_network(app)
    _check_groups(app)
    check_eks_endpoint(app)
    if app.existing_cluster is not None:
        check_existing_arns(app, app.existing_cluster)
        _describe_existing_groups(app.hyperpod, app.existing_cluster)
    check_addons(app)
    check_kvcache(app)
    check_bench(app)
    check_pipeline(app)
    check_observability(app)


PROD = "prod"


def check_eks_endpoint(app: AppConfig) -> None:
    """A public API endpoint in prod admits only the networks the config names."""
    eks = app.eks
    if (
        app.existing_cluster is None
        and app.environment == PROD
        and eks.endpoint_access == "public_and_private"
        and not eks.public_access_cidrs
    ):
        raise RuleViolation(
            "the CIDRs that may reach the public API endpoint (e.g. [203.0.113.0/24]), required "
            "in prod while eks.endpoint_access is public_and_private",
            "list the networks that deploy and run kubectl in eks.public_access_cidrs, or set "
            "eks.endpoint_access to private",
            field="eks.public_access_cidrs",
            value=[],
        )


def _check_groups(app: AppConfig) -> None:
    """The instance groups: two GPU nodes for a shared L2, two different names."""
    gpu = app.hyperpod.gpu_group
    if "curvine" in app.kvcache.l2_backends and gpu.instance_count < 2:
        raise RuleViolation(
            "at least 2 while an endpoint's L2 is curvine (Curvine pools the GPU nodes' NVMe): "
            "one node cannot show cross-node reuse",
            "set hyperpod.gpu_group.instance_count to 2 or more, or move the endpoints off "
            "curvine (kvcache.l2_backend or the endpoint's l2_backend)",
            field="hyperpod.gpu_group.instance_count",
            value=gpu.instance_count,
        )
    if app.hyperpod.gpu_group.name == app.hyperpod.system_group.name:
        raise RuleViolation(
            "different names for the GPU and system instance groups",
            "rename one of them",
            field="hyperpod.system_group.name",
            value=app.hyperpod.system_group.name,
        )


def _describe_existing_groups(hyperpod: HyperPodConfig, existing: ExistingClusterConfig) -> None:
    """On a cluster the app does not create, the defaults of ``hyperpod.gpu_group`` and
    ``system_group`` describe nothing: the GPU group's name selects the L2 nodes (HyperPod labels
    every node with its instance group's name), its type sizes the endpoint and its count the L2
    pool, and a wrong default would select no node while CloudFormation still succeeds. So both
    groups must be written out (a group given needs name, instance_type and instance_count);
    ``hpkv preflight`` compares them with DescribeCluster."""
    for group in ("gpu_group", "system_group"):
        if group in hyperpod.model_fields_set:
            continue
        kind = "GPU" if group == "gpu_group" else "CPU (system)"
        raise RuleViolation(
            f"set with existing_cluster: name, instance_type and instance_count of the existing "
            f"cluster's {kind} instance group (the defaults describe a cluster this app creates)",
            f"run `aws sagemaker describe-cluster --cluster-name "
            f"{existing.hyperpod_cluster_name} --query 'InstanceGroups[].[InstanceGroupName,"
            f"InstanceType,CurrentCount]'` (or `hpkv preflight`) and write "
            f"hyperpod.{group}",
            field=f"hyperpod.{group}.name",
        )


def check_addons(app: AppConfig) -> None:
    """Rules that span the add-ons and other sections; raise RuleViolation(field=...)."""
    addons = app.addons
    if not addons.enabled:
        return
    for key in ADDON_KEYS:
        item = addons.settings(key)
        if item.enabled and item.mode != "create" and not app.existing:
            raise RuleViolation(
                "create (adopt and skip are for an existing cluster: a cluster this app "
                "creates has no add-ons installed yet)",
                f"set addons.{key}.mode to create, or configure existing_cluster",
                field=f"addons.{key}.mode",
                value=item.mode,
            )
        for name in ("adopted_role_arn", "adopted_configuration"):
            if getattr(item, name) is not None and item.mode != "adopt":
                raise RuleViolation(
                    "null unless mode is adopt (the values describe an installed add-on taken "
                    "over as it is; create makes its own roles, skip touches nothing)",
                    f"remove addons.{key}.{name}, or set addons.{key}.mode to adopt",
                    field=f"addons.{key}.{name}",
                    value=getattr(item, name),
                )
    operator = addons.inference_operator
    if operator.adopted and operator.adopted_configuration is None:
        raise RuleViolation(
            "the installed add-on's configurationValues (it always has some: its execution role "
            "and TLS bucket); without them an update would reset the owner's operator",
            "run `hpkv preflight --env <env>` and paste the adopted_configuration "
            "it prints, or set addons.inference_operator.mode to skip",
            field="addons.inference_operator.adopted_configuration",
        )
    if not addons.inference_operator.enabled:
        return
    existing = app.existing_cluster
    if (
        existing is not None
        and operator.mode == "create"
        and operator.alb_enabled
        and existing.vpc_id is None
    ):
        raise RuleViolation(
            "the cluster's VPC id while addons.inference_operator creates the AWS Load Balancer "
            "Controller's role (alb_enabled): the role may create and change security groups in "
            "that VPC only",
            f"run `aws eks describe-cluster --name {existing.eks_cluster_name} --query "
            "cluster.resourcesVpcConfig.vpcId` and set existing_cluster.vpc_id, or set "
            "addons.inference_operator.alb_enabled to false when the cluster runs its own "
            "controller",
            field="existing_cluster.vpc_id",
            value=None,
        )
    for key in INFERENCE_REQUIRES:
        if not addons.settings(key).enabled:
            raise RuleViolation(
                f"true while addons.inference_operator.enabled is true ({_WHY_REQUIRED[key]})",
                f"set addons.{key}.enabled to true (mode: skip if it is already installed), "
                "or addons.inference_operator.enabled to false",
                field=f"addons.{key}.enabled",
                value=False,
            )


def _check_fsx(app: AppConfig) -> None:
    """Where the file system goes, and what its S3 link may name."""
    fsx = app.kvcache.fsx
    placement = ("hyperpod_subnet_id", "vpc_id", "client_security_group_id")
    if app.existing_cluster is None:
        for name in placement:
            if getattr(fsx, name) is not None:
                raise RuleViolation(
                    "null with a cluster the app creates: the file system goes into its HyperPod "
                    "subnet (network.hyperpod_subnet) and admits its cluster security group",
                    f"remove kvcache.fsx.{name}",
                    field=f"kvcache.fsx.{name}",
                    value=getattr(fsx, name),
                )
    else:
        # Checked in this order, so the VPC's command can name the subnet already written.
        cluster = app.existing_cluster.hyperpod_cluster_name
        describe = f"aws sagemaker describe-cluster --cluster-name {cluster}"
        for name, command in (
            ("hyperpod_subnet_id", f"{describe} --query 'VpcConfig.Subnets[0]'"),
            (
                "vpc_id",
                f"aws ec2 describe-subnets --subnet-ids {fsx.hyperpod_subnet_id} "
                "--query 'Subnets[0].VpcId'",
            ),
            ("client_security_group_id", f"{describe} --query 'VpcConfig.SecurityGroupIds[0]'"),
        ):
            if getattr(fsx, name) is None:
                raise RuleViolation(
                    "set with existing_cluster and l2_backend fsx_lustre: the file system is "
                    "placed in the HyperPod subnet (the GPU nodes' AZ) and admits only the nodes' "
                    "security group",
                    f"run `{command} --output text` and write the id to kvcache.fsx.{name}",
                    field=f"kvcache.fsx.{name}",
                )
    repo = fsx.data_repository
    if repo is not None and repo.bucket_region != app.region:
        raise RuleViolation(
            f"{app.region} (the environment's region: the association links a bucket in the "
            "file system's region)",
            f"use a bucket in {app.region}, or remove kvcache.fsx.data_repository",
            field="kvcache.fsx.data_repository.bucket_region",
            value=repo.bucket_region,
        )


def _check_endpoint(app: AppConfig, i: int, e: EndpointConfig) -> None:
    field = f"kvcache.endpoints.{i}"
    gpu = app.hyperpod.gpu_group
    itype = e.instance_type or gpu.instance_type
    inst = GPU_INSTANCES.get(itype)  # every type there has local NVMe
    if inst is None:
        raise RuleViolation(
            f"a GPU type with local NVMe ({', '.join(GPU_INSTANCES)})",
            "use a G6e or P5 type",
            field=f"{field}.instance_type",
            value=itype,
        )
    if itype != gpu.instance_type:
        raise RuleViolation(
            f"{gpu.instance_type} (hyperpod.gpu_group.instance_type: the only GPU nodes)",
            "remove instance_type or make it match the GPU group",
            field=f"{field}.instance_type",
            value=itype,
        )
    if e.metrics_port != e.container_port:
        raise RuleViolation(
            f"{e.container_port} (container_port): vLLM serves /metrics on the port it listens on",
            "remove metrics_port, or set it to container_port",
            field=f"{field}.metrics_port",
            value=e.metrics_port,
        )
    tp = e.tensor_parallel_size
    if tp > inst.gpus:
        raise RuleViolation(
            f"at most {inst.gpus} (GPUs of one {itype})",
            "lower tensor_parallel_size or pick a larger instance",
            field=f"{field}.tensor_parallel_size",
            value=tp,
        )
    m = e.model
    need_gib = m.parameters_billion * 1e9 * m.bytes_per_parameter / tp / 2**30
    if need_gib > inst.gpu_memory_gib:
        raise RuleViolation(
            f"weights that fit one GPU: {m.parameters_billion}e9 params x "
            f"{m.bytes_per_parameter} bytes / tensor-parallel {tp} = {need_gib:.1f} GiB > "
            f"{inst.gpu_memory_gib} GiB per GPU of {itype}",
            "raise tensor_parallel_size, quantize (bytes_per_parameter 1) or use a larger GPU",
            field=f"{field}.model.parameters_billion",
            value=m.parameters_billion,
        )
    addon = app.addons.inference_operator
    op = addon.operator
    # What the app renders and the pinned operator takes: one list, so a value picked from it
    # is never refused by the next run.
    takes = [s for s in MODEL_SOURCES if s in op.model_sources]
    if m.source not in takes:
        fix = (
            "use source s3 with model.s3_bucket (stage the weights with aws s3 sync, see "
            "docs/kubernetes-layer.md), or pin an add-on version shipping operator 3.1+ "
            "after checking `aws eks describe-addon-versions --addon-name "
            f"{ADDON_NAME} --kubernetes-version {app.eks.kubernetes_version}` and adding "
            "its CRD (infra/config/operator_versions.py)"
            if m.source in MODEL_SOURCES
            else f"set {field}.model.source to {' or '.join(takes)}"
        )
        raise RuleViolation(
            f"{' or '.join(takes)} (model sources of operator {op.version}, shipped "
            f"by the pinned add-on {addon.version})",
            fix,
            field=f"{field}.model.source",
            value=m.source,
        )
    if m.source == "s3" and not m.s3_bucket:
        raise RuleViolation(
            "a bucket name when model.source is s3",
            "set model.s3_bucket",
            field=f"{field}.model.s3_bucket",
        )
    if e.l2_backend != "none" and app.tiered_storage.mode != "Enable":
        raise RuleViolation(
            f"none while tiered_storage.mode is Disable ({_WHY_TIERED_STORAGE[e.l2_backend]})",
            f"set tiered_storage.mode to Enable, or {e.l2_field(i)} to none",
            field=e.l2_field(i),
            value=e.l2_backend,
        )
    _check_l1_fits(app, i, e)


def _check_l1_fits(app: AppConfig, i: int, e: EndpointConfig) -> None:
    """LMCache allocates its whole CPU cache at start: where the operator drops the endpoint's
    L1 size (tieredstorage and none endpoints under operator 3.2), the Pod's memory must hold
    vLLM's need and LMCache's default L1, or the container is OOM-killed as it starts."""
    l1 = l1_in_container_gib(app, e)
    if l1 <= e.l1_cache_gib:
        return
    need = VLLM_HOST_GIB + VLLM_HOST_GIB_PER_GPU * e.tensor_parallel_size
    floor = math.ceil(need + l1)
    op = app.addons.inference_operator.operator
    raise RuleViolation(
        f"at least {floor} on a {e.l2_backend} endpoint under operator {op.version}: it drops "
        f"the endpoint's LMCACHE_MAX_LOCAL_CPU_SIZE, so LMCache allocates its default "
        f"{l1:g} GiB L1 beside the {need} GiB vLLM needs",
        f"raise memory_gib to {floor}, or set enable_l1_cache: false",
        field=f"kvcache.endpoints.{i}.memory_gib",
        value=e.memory_gib,
    )


# Why an endpoint with an L2 needs Tiered Storage on, by backend.
_WHY_TIERED_STORAGE = {
    "tieredstorage": "the tieredstorage L2 is the memory Tiered Storage reserves for the "
    "ai-toolkit daemon",
    "curvine": "the operator renders an L2 endpoint's Pod with a mount of the ai-toolkit "
    "daemon's shared memory, which only Tiered Storage creates",
}
_WHY_TIERED_STORAGE["fsx_lustre"] = _WHY_TIERED_STORAGE["curvine"]


def _check_gpu_slots(app: AppConfig) -> None:
    """All endpoints share the GPU group: replicas x TP must fit, with a surge slot if asked."""
    gpu = app.hyperpod.gpu_group
    inst = GPU_INSTANCES[gpu.instance_type]
    total = gpu.instance_count * inst.gpus
    used = 0
    for i, e in enumerate(app.kvcache.endpoints):
        # Autoscaled endpoints count at their maximum: all may peak at once.
        used += peak_replicas(e.replicas, e.autoscaling) * e.tensor_parallel_size
        surge = e.tensor_parallel_size if e.rollout == "surge" else 0
        if used + surge > total:
            why = (
                f"{used} GPUs for replicas + {surge} for the rollout's surge Pod > {total} GPUs "
                f"({gpu.instance_count} nodes x {inst.gpus}): the surge Pod would stay Pending and "
                "the rollout would deadlock"
                if surge and used <= total
                else f"{used} GPUs > {total} GPUs ({gpu.instance_count} nodes x {inst.gpus})"
            )
            key = "autoscaling.max_replicas" if e.autoscaling else "replicas"
            raise RuleViolation(
                f"{key.split('.')[-1]} that fit the GPU group: {why}",
                f"lower {key}, add GPU nodes, or set rollout: scale_down_first",
                field=f"kvcache.endpoints.{i}.{key}",
                value=peak_replicas(e.replicas, e.autoscaling),
            )


def check_kvcache(app: AppConfig) -> None:
    """Rules that span the Kubernetes layer and other sections; raise RuleViolation(field=...)."""
    kv = app.kvcache
    cv = kv.curvine
    check_endpoint_names(app)
    check_curvine(app)
    check_namespaces(kv)
    # The claims are in the namespaces of the endpoints on Curvine only.
    namespaces = sorted({e.namespace for e in kv.endpoints if e.l2_backend == "curvine"})
    if "curvine" in kv.l2_backends and cv.static_pv.enabled and len(namespaces) > 1:
        # Each namespace has its own L2 claim, and a PersistentVolume binds one claim only:
        # the second claim of the one static PV would stay Pending, and its endpoints with it.
        raise RuleViolation(
            f"false while the endpoints on curvine use more than one namespace "
            f"({', '.join(namespaces)}): the static PersistentVolume binds one claim",
            "put those endpoints in one namespace, or set static_pv.enabled: false (dynamic "
            "provisioning gives each namespace its own volume on curvine-sc)",
            field="kvcache.curvine.static_pv.enabled",
            value=True,
        )
    if "fsx_lustre" in kv.l2_backends:
        _check_fsx(app)
    if not kv.kyverno.install and app.existing_cluster is None:
        raise RuleViolation(
            "true on a cluster this app creates (no Kyverno is installed there)",
            "remove kvcache.kyverno.install, or set existing_cluster to use an installed Kyverno",
            field="kvcache.kyverno.install",
            value=False,
        )
    for i, e in enumerate(kv.endpoints):
        _check_endpoint(app, i, e)
    check_autoscaling(app)
    _check_gpu_slots(app)
    check_node_budget(app)


def check_pipeline(app: AppConfig) -> None:
    """A pipeline needs its source; it cannot promote an environment to itself."""
    pipeline = app.pipeline
    if not pipeline.enabled:
        return
    for key in ("connection_arn", "repository"):
        if getattr(pipeline, key) is None:
            raise RuleViolation(
                "a value when pipeline.enabled is true",
                f"set pipeline.{key} (see README, CI/CD)",
                field=f"pipeline.{key}",
            )
    if pipeline.test_environment == app.environment:
        raise RuleViolation(
            f"an environment other than {app.environment!r} (the one the pipeline promotes to)",
            "set pipeline.test_environment to the pre-production environment, e.g. test",
            field="pipeline.test_environment",
            value=pipeline.test_environment,
        )


def check_observability(app: AppConfig) -> None:
    """A customer managed workspace key only without a managed collector. Existing clusters:
    the collector's network comes from config, not from our stacks. Both lists or neither (then
    the collector is left out, with a synth warning)."""
    obs = app.observability
    if obs.workspace_encryption == "customer_managed" and creates_collector(app):
        raise RuleViolation(
            "aws_owned while the stack creates the managed collector (the AMP user guide: a "
            "workspace encrypted with a customer managed key cannot use AWS managed collectors)",
            "remove observability.workspace_encryption, or (existing cluster) leave "
            "scraper_subnet_ids and scraper_security_group_ids empty and send metrics with a "
            "collector of your own",
            field="observability.workspace_encryption",
            value=obs.workspace_encryption,
        )
    if not obs.enabled or app.existing_cluster is None:
        return
    if not obs.scraper_subnet_ids and not obs.scraper_security_group_ids:
        return
    if len(obs.scraper_subnet_ids) < 2:
        raise RuleViolation(
            "two or more subnets in different AZs (the managed collector needs two AZs)",
            "list the EKS cluster's subnets (aws eks describe-cluster --query "
            "cluster.resourcesVpcConfig.subnetIds)",
            field="observability.scraper_subnet_ids",
            value=list(obs.scraper_subnet_ids),
        )
    if not obs.scraper_source_cidrs:
        raise RuleViolation(
            "the CIDRs of scraper_subnet_ids (Curvine's NetworkPolicies admit the collector's "
            "metrics scrapes from them)",
            "aws ec2 describe-subnets --subnet-ids <ids> --query 'Subnets[].CidrBlock'",
            field="observability.scraper_source_cidrs",
            value=[],
        )
    if not obs.scraper_security_group_ids:
        raise RuleViolation(
            "at least one security group that reaches the nodes",
            "use the cluster security group (aws eks describe-cluster --query "
            "cluster.resourcesVpcConfig.clusterSecurityGroupId)",
            field="observability.scraper_security_group_ids",
            value=[],
        )
