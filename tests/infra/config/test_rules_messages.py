"""The whole line a user sees for each rule across config sections (infra/config/rules.py) and
for the kvcache section's own, word for word (pure parsing, no double).

A rule's message is its user interface: ``<file>: <field> = <value>: allowed: ...; fix: ...``.
Each test here pins that line for one rule, so a reworded or dropped part is a failing test.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from infra.config import parse_config
from infra.facts.instances import GPU_INSTANCES
from k8s.l2_pod import l2_url
from tests.support.config import BASE, SOURCE, existing_cluster, refusal, with_overrides

# --- where L2 is mounted in the vLLM container ---------------------------------------------------

MOUNT_ALLOWED = (
    "allowed: an absolute path like /mnt/curvine/l2cache: no trailing '/', no '.', '..' or "
    "empty segments, not / and not under /dev, /proc or /sys; fix: use a directory of its own "
    "under /mnt"
)


@pytest.mark.parametrize(
    "path",
    [
        "mnt/l2",
        "/",
        "/mnt/l2/",
        "/mnt//l2",
        "/mnt/./l2",
        "/mnt/../l2",
        "/dev/shm/l2",
        "/proc/l2",
        "/sys",
    ],
)
def test_an_l2_mount_path_that_is_not_a_clean_absolute_path_of_its_own_is_refused(
    path: str,
) -> None:
    """LMCACHE_REMOTE_URL is fs://localhost:0<path>/, built from the path as written."""
    field = "kvcache.l2_mount_path"
    assert refusal({field: path}) == f"{SOURCE}: {field} = {path!r}: {MOUNT_ALLOWED}"


@pytest.mark.parametrize("path", ["/l2", "/mnt/curvine/l2cache", "/devices/l2", "/srv/sys"])
def test_a_clean_absolute_l2_mount_path_is_accepted_and_makes_the_url(path: str) -> None:
    config = parse_config(with_overrides({"kvcache.l2_mount_path": path}), SOURCE, "dev")
    assert l2_url(config) == f"fs://localhost:0{path}/"


# --- where the FSx file system goes, and the bucket it exports to --------------------------------

PLACEMENT = {
    "hyperpod_subnet_id": "subnet-0aaaa1111bbbb2222",
    "vpc_id": "vpc-0aaaa1111bbbb2222",
    "client_security_group_id": "sg-0eeee5555ffff6666",
}
EXISTING_CLUSTER = existing_cluster()


@pytest.mark.parametrize("key", list(PLACEMENT))
def test_an_fsx_placement_id_with_a_cluster_the_app_creates_is_refused(key: str) -> None:
    """Each id on its own: the app places the file system in the cluster it creates."""
    field = f"kvcache.fsx.{key}"
    value = PLACEMENT[key]
    assert refusal({"kvcache.l2_backend": "fsx_lustre", field: value}) == (
        f"{SOURCE}: {field} = {value!r}: allowed: null with a cluster the app creates: the file "
        "system goes into its HyperPod subnet (network.hyperpod_subnet) and admits its cluster "
        f"security group; fix: remove {field}"
    )


@pytest.mark.parametrize(
    ("key", "command"),
    [
        (
            "hyperpod_subnet_id",
            "aws sagemaker describe-cluster --cluster-name team-hyperpod "
            "--query 'VpcConfig.Subnets[0]'",
        ),
        (
            "vpc_id",
            "aws ec2 describe-subnets --subnet-ids subnet-0aaaa1111bbbb2222 "
            "--query 'Subnets[0].VpcId'",
        ),
        (
            "client_security_group_id",
            "aws sagemaker describe-cluster --cluster-name team-hyperpod "
            "--query 'VpcConfig.SecurityGroupIds[0]'",
        ),
    ],
)
def test_a_missing_fsx_placement_id_on_an_existing_cluster_names_the_command_that_prints_it(
    key: str, command: str
) -> None:
    """The ids are asked for in order (the ones before ``key`` written), so the VPC's command
    names the subnet the user has just written."""
    given = dict(itertools.takewhile(lambda item: item[0] != key, PLACEMENT.items()))
    overrides = {"existing_cluster": EXISTING_CLUSTER, "kvcache.l2_backend": "fsx_lustre"}
    overrides.update({f"kvcache.fsx.{k}": v for k, v in given.items()})
    field = f"kvcache.fsx.{key}"
    assert refusal(overrides) == (
        f"{SOURCE}: {field} = (missing): allowed: set with existing_cluster and l2_backend "
        "fsx_lustre: the file system is placed in the HyperPod subnet (the GPU nodes' AZ) and "
        f"admits only the nodes' security group; fix: run `{command} --output text` and write "
        f"the id to {field}"
    )


def test_an_export_bucket_in_another_region_is_refused_with_the_environments_region() -> None:
    field = "kvcache.fsx.data_repository.bucket_region"
    repo = {"bucket": "amzn-s3-demo-kv", "bucket_region": "eu-west-1"}
    overrides = {"kvcache.l2_backend": "fsx_lustre", "kvcache.fsx.data_repository": repo}
    assert refusal(overrides) == (
        f"{SOURCE}: {field} = 'eu-west-1': allowed: us-west-2 (the environment's region: the "
        "association links a bucket in the file system's region); fix: use a bucket in "
        "us-west-2, or remove kvcache.fsx.data_repository"
    )


# --- add-on modes on a cluster this app creates -------------------------------------------------


@pytest.mark.parametrize("key", ["cert_manager", "ebs_csi", "inference_operator"])
@pytest.mark.parametrize("mode", ["adopt", "skip"])
def test_adopting_or_skipping_an_add_on_of_a_cluster_this_app_creates_is_refused(
    key: str, mode: str
) -> None:
    field = f"addons.{key}.mode"
    assert refusal({field: mode}) == (
        f"{SOURCE}: {field} = {mode!r}: allowed: create (adopt and skip are for an existing "
        "cluster: a cluster this app creates has no add-ons installed yet); fix: set "
        f"{field} to create, or configure existing_cluster"
    )


def test_the_add_on_rules_do_not_apply_when_the_app_installs_no_add_ons() -> None:
    assert refusal({"addons.enabled": False, "addons.cert_manager.mode": "skip"}) is None


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("adopted_role_arn", "arn:aws:iam::111122223333:role/theirs"),
        ("adopted_configuration", '{"controller":{"replicaCount":1}}'),
    ],
)
@pytest.mark.parametrize("mode", ["create", "skip"])
def test_what_describes_an_adopted_add_on_is_refused_unless_it_is_adopted(
    name: str, value: Any, mode: str
) -> None:
    field = f"addons.ebs_csi.{name}"
    overrides = {"existing_cluster": EXISTING_CLUSTER, "addons.ebs_csi.mode": mode, field: value}
    assert refusal(overrides) == (
        f"{SOURCE}: {field} = {value!r}: allowed: null unless mode is adopt (the values describe "
        "an installed add-on taken over as it is; create makes its own roles, skip touches "
        f"nothing); fix: remove {field}, or set addons.ebs_csi.mode to adopt"
    )
    assert refusal({**overrides, "addons.ebs_csi.mode": "adopt"}) is None


OPERATOR = "addons.inference_operator"


def test_an_adopted_operator_needs_its_configuration_and_says_what_prints_it() -> None:
    """An update with no configurationValues would reset the owner's operator settings."""
    overrides = {"existing_cluster": EXISTING_CLUSTER, f"{OPERATOR}.mode": "adopt"}
    assert refusal(overrides) == (
        f"{SOURCE}: {OPERATOR}.adopted_configuration = (missing): allowed: the installed add-on's "
        "configurationValues (it always has some: its execution role and TLS bucket); without "
        "them an update would reset the owner's operator; fix: run `hpkv preflight "
        "--env <env>` and paste the adopted_configuration it prints, or set "
        f"{OPERATOR}.mode to skip"
    )
    adopted = {**overrides, f"{OPERATOR}.adopted_configuration": '{"executionRoleArn":"x"}'}
    assert refusal(adopted) is None


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("cert_manager", "the operator's webhooks need the cert-manager CRDs"),
        (
            "s3_csi",
            "the operator's init container refuses to start without CSIDriver s3.csi.aws.com",
        ),
        (
            "fsx_csi",
            "the operator's init container refuses to start without CSIDriver fsx.csi.aws.com",
        ),
        (
            "metrics_server",
            "the AWS setup guide lists it as required; the install fails without it",
        ),
    ],
)
def test_the_operator_needs_each_of_its_dependencies_enabled(key: str, why: str) -> None:
    field = f"addons.{key}.enabled"
    assert refusal({field: False}) == (
        f"{SOURCE}: {field} = False: allowed: true while {OPERATOR}.enabled is true ({why}); "
        f"fix: set {field} to true (mode: skip if it is already installed), or "
        f"{OPERATOR}.enabled to false"
    )
    assert refusal({field: False, f"{OPERATOR}.enabled": False}) is None


# --- endpoints on the GPU group (dev: 2 x ml.g6e.4xlarge, one GPU each) --------------------------


def _endpoints(*overrides: dict[str, Any]) -> dict[str, Any]:
    base = BASE["kvcache"]["endpoints"][0]
    return {"kvcache.endpoints": [{**base, **o} for o in overrides]}


def test_endpoints_share_the_gpu_group_so_their_replicas_add_up() -> None:
    """Each endpoint fits alone; together they need three GPUs of two."""
    field = "kvcache.endpoints.1.replicas"
    assert refusal(_endpoints({"replicas": 2}, {"name": "other", "replicas": 1})) == (
        f"{SOURCE}: {field} = 1: allowed: replicas that fit the GPU group: 3 GPUs > 2 GPUs "
        "(2 nodes x 1); fix: lower replicas, add GPU nodes, or set rollout: scale_down_first"
    )


def test_a_surge_rollout_needs_a_free_gpu_for_its_extra_pod() -> None:
    field = "kvcache.endpoints.0.replicas"
    assert refusal(_endpoints({"replicas": 2, "rollout": "surge"})) == (
        f"{SOURCE}: {field} = 2: allowed: replicas that fit the GPU group: 2 GPUs for replicas + "
        "1 for the rollout's surge Pod > 2 GPUs (2 nodes x 1): the surge Pod would stay Pending "
        "and the rollout would deadlock; fix: lower replicas, add GPU nodes, or set rollout: "
        "scale_down_first"
    )
    assert refusal(_endpoints({"replicas": 1, "rollout": "surge"})) is None


def test_replicas_beyond_the_gpus_are_refused_as_such_whatever_the_rollout() -> None:
    field = "kvcache.endpoints.0.replicas"
    assert refusal(_endpoints({"replicas": 3, "rollout": "surge"})) == (
        f"{SOURCE}: {field} = 3: allowed: replicas that fit the GPU group: 3 GPUs > 2 GPUs "
        "(2 nodes x 1); fix: lower replicas, add GPU nodes, or set rollout: scale_down_first"
    )


def test_an_endpoint_on_a_type_without_local_nvme_is_refused_with_the_types_that_have_it() -> None:
    field = "kvcache.endpoints.0.instance_type"
    assert refusal(_endpoints({"instance_type": "ml.g5.4xlarge"})) == (
        f"{SOURCE}: {field} = 'ml.g5.4xlarge': allowed: a GPU type with local NVMe "
        f"({', '.join(GPU_INSTANCES)}); fix: use a G6e or P5 type"
    )


def test_an_endpoint_runs_only_on_the_gpu_groups_type() -> None:
    field = "kvcache.endpoints.0.instance_type"
    assert refusal(_endpoints({"instance_type": "ml.g6e.8xlarge"})) == (
        f"{SOURCE}: {field} = 'ml.g6e.8xlarge': allowed: ml.g6e.4xlarge "
        "(hyperpod.gpu_group.instance_type: the only GPU nodes); fix: remove instance_type or "
        "make it match the GPU group"
    )


def test_tensor_parallelism_beyond_the_instances_gpus_is_refused() -> None:
    field = "kvcache.endpoints.0.tensor_parallel_size"
    assert refusal(_endpoints({"tensor_parallel_size": 2})) == (
        f"{SOURCE}: {field} = 2: allowed: at most 1 (GPUs of one ml.g6e.4xlarge); "
        "fix: lower tensor_parallel_size or pick a larger instance"
    )


# 25.769803776e9 parameters x 2 bytes is 48 GiB exactly: an L40S's memory.
EXACTLY_48_GIB = 25.769803776


def test_weights_of_exactly_one_gpus_memory_fit_and_a_byte_more_does_not() -> None:
    model = {**BASE["kvcache"]["endpoints"][0]["model"], "bytes_per_parameter": 2}
    assert refusal(_endpoints({"model": {**model, "parameters_billion": EXACTLY_48_GIB}})) is None
    field = "kvcache.endpoints.0.model.parameters_billion"
    over = EXACTLY_48_GIB + 1e-9
    assert refusal(_endpoints({"model": {**model, "parameters_billion": over}})) == (
        f"{SOURCE}: {field} = {over!r}: allowed: weights that fit one GPU: {over}e9 params x 2.0 "
        "bytes / tensor-parallel 1 = 48.0 GiB > 48 GiB per GPU of ml.g6e.4xlarge; fix: raise "
        "tensor_parallel_size, quantize (bytes_per_parameter 1) or use a larger GPU"
    )


def test_tensor_parallelism_divides_the_weights_across_gpus() -> None:
    """40e9 x 2 bytes is 74.5 GiB: too much for one 48 GiB GPU, 37.3 GiB on each of two."""
    model = {**BASE["kvcache"]["endpoints"][0]["model"], "parameters_billion": 40}
    four_gpus = {"hyperpod.gpu_group.instance_type": "ml.g6e.12xlarge"}
    split = _endpoints({"model": model, "tensor_parallel_size": 2, "replicas": 1})
    assert refusal({**four_gpus, **split}) is None
    whole = _endpoints({"model": model, "tensor_parallel_size": 1, "replicas": 1})
    assert "= 74.5 GiB > 48 GiB per GPU" in str(refusal({**four_gpus, **whole}))


def test_an_s3_model_needs_its_bucket() -> None:
    model = {**BASE["kvcache"]["endpoints"][0]["model"], "source": "s3", "s3_bucket": None}
    field = "kvcache.endpoints.0.model.s3_bucket"
    assert refusal(_endpoints({"model": model})) == (
        f"{SOURCE}: {field} = (missing): allowed: a bucket name when model.source is s3; "
        "fix: set model.s3_bucket"
    )


# --- rules across the kvcache section ------------------------------------------------------------


def test_two_endpoints_of_one_name_are_refused_naming_the_first() -> None:
    assert refusal(_endpoints({"replicas": 1}, {"replicas": 1})) == (
        f"{SOURCE}: kvcache.endpoints.1.name = 'qwen3-8b': allowed: a name no other endpoint of "
        "the environment has (kvcache.endpoints.0 in namespace inference is qwen3-8b): each "
        "names a SageMaker endpoint, unique per account and Region; fix: rename "
        "kvcache.endpoints.1.name"
    )


@pytest.mark.parametrize(("low", "high"), [(90, 90), (95, 90)])
def test_the_evictors_low_mark_must_stay_below_its_high_mark(low: int, high: int) -> None:
    field = "kvcache.curvine.evictor.low_water_percent"
    assert refusal({field: low, "kvcache.curvine.evictor.high_water_percent": high}) == (
        f"{SOURCE}: {field} = {low}: allowed: less than high_water_percent ({high}); "
        "fix: lower low_water_percent"
    )


@pytest.mark.parametrize(
    ("limit", "requested", "unit"),
    [
        ("memory_limit_mib", "memory_request_mib", 4608),  # above the limit's 8 GiB floor
        ("cpu_limit_millicores", "cpu_request_millicores", 500),
    ],
)
def test_fuses_limit_must_be_at_least_its_request(limit: str, requested: str, unit: int) -> None:
    field = f"kvcache.curvine.fuse.{limit}"
    overrides = {field: 2 * unit - 1, f"kvcache.curvine.fuse.{requested}": 2 * unit}
    assert refusal(overrides) == (
        f"{SOURCE}: {field} = {2 * unit - 1}: allowed: at least {requested} ({2 * unit}); "
        f"fix: raise {limit}"
    )
    assert refusal({**overrides, field: 2 * unit}) is None


NVME_GIB = int(GPU_INSTANCES["ml.g6e.4xlarge"].nvme_gb * 1e9 / 2**30)


def test_curvines_pool_must_fit_the_gpu_nodes_nvme_with_its_reserve_inside_it() -> None:
    """Curvine keeps ``reserved_gib`` free out of the capacity, not beside it: a capacity of the
    whole disk fits whatever the reserve; one GiB more does not."""
    field = "kvcache.curvine.worker.capacity_gib"
    overrides = {field: NVME_GIB, "kvcache.curvine.worker.reserved_gib": 10}
    assert refusal(overrides) is None
    assert refusal({**overrides, field: NVME_GIB + 1}) == (
        f"{SOURCE}: {field} = {NVME_GIB + 1}: allowed: capacity + weights_cache_gib <= {NVME_GIB} "
        "GiB (local NVMe of ml.g6e.4xlarge; reserved_gib is part of the capacity), here "
        f"{NVME_GIB + 1} + 0 = {NVME_GIB + 1}; fix: lower kvcache.curvine.worker.capacity_gib to "
        f"{NVME_GIB}"
    )


def test_the_operators_weights_cache_is_sized_with_curvine_on_the_one_nvme() -> None:
    """The weights cache (operator 3.3+, host path /opt/dlami/nvme by default) and Curvine's
    worker data share the disk: a budget for it leaves Curvine that much less."""
    field = "kvcache.curvine.worker.capacity_gib"
    weights = "kvcache.curvine.worker.weights_cache_gib"
    fits = {field: 400, "kvcache.curvine.worker.reserved_gib": 10, weights: NVME_GIB - 400}
    assert refusal(fits) is None
    assert refusal({**fits, weights: NVME_GIB - 399}) == (
        f"{SOURCE}: {field} = 400: allowed: capacity + weights_cache_gib <= {NVME_GIB} GiB "
        "(local NVMe of ml.g6e.4xlarge; reserved_gib is part of the capacity), here 400 + "
        f"{NVME_GIB - 399} = {NVME_GIB + 1}; fix: lower kvcache.curvine.worker.capacity_gib to 399"
    )
    # No room left for Curvine's smallest worker: the fix is the weights cache.
    assert refusal({**fits, field: 11, weights: NVME_GIB - 5}) == (
        f"{SOURCE}: {field} = 11: allowed: capacity + weights_cache_gib <= {NVME_GIB} GiB "
        "(local NVMe of ml.g6e.4xlarge; reserved_gib is part of the capacity), here 11 + "
        f"{NVME_GIB - 5} = {NVME_GIB + 6}; fix: lower kvcache.curvine.worker.weights_cache_gib"
    )


def test_curvines_reserve_must_leave_room_to_write() -> None:
    """Curvine keeps ``dir_reserved`` free out of the worker's capacity: a reserve as large as
    the capacity leaves a pool no write fits in, and an evictor with nothing to aim at."""
    field = "kvcache.curvine.worker.reserved_gib"
    overrides = {"kvcache.curvine.worker.capacity_gib": 50, field: 50}
    assert refusal(overrides) == (
        f"{SOURCE}: {field} = 50: allowed: less than capacity_gib (50): Curvine keeps it free "
        "out of the capacity; fix: lower kvcache.curvine.worker.reserved_gib"
    )
    assert refusal({**overrides, field: 49}) is None


def test_with_the_l2_on_fsx_curvines_pool_size_is_not_checked_against_the_nvme() -> None:
    """Curvine is off then; its worker settings size nothing."""
    overrides = {"kvcache.l2_backend": "fsx_lustre", "kvcache.curvine.worker.capacity_gib": 10**5}
    assert refusal(overrides) is None


@pytest.mark.parametrize("shared", ["inference", "kyverno"], ids=["endpoints'", "kyverno's"])
def test_curvine_gets_a_namespace_of_its_own(shared: str) -> None:
    """Curvine's namespace is the only privileged one (its FUSE and CSI Pods)."""
    field = "kvcache.curvine.namespace"
    assert refusal({field: shared}) == (
        f"{SOURCE}: {field} = {shared!r}: allowed: a namespace of its own (the only privileged "
        "one); fix: use different namespaces for Curvine, Kyverno and the endpoints"
    )


def test_kyverno_is_installed_on_a_cluster_this_app_creates() -> None:
    field = "kvcache.kyverno.install"
    assert refusal({field: False}) == (
        f"{SOURCE}: {field} = False: allowed: true on a cluster this app creates (no Kyverno is "
        "installed there); fix: remove kvcache.kyverno.install, or set existing_cluster to use "
        "an installed Kyverno"
    )
    assert refusal({field: False, "existing_cluster": EXISTING_CLUSTER}) is None


@pytest.mark.parametrize("field", ["kvcache.endpoints.0.name", "kvcache.endpoints.0.namespace"])
def test_an_endpoint_name_or_namespace_that_is_no_dns_label_is_refused(field: str) -> None:
    assert refusal({field: "Qwen_8B"}) == (
        f"{SOURCE}: {field} = 'Qwen_8B': allowed: a DNS-1123 label: 1-63 lower-case letters, "
        "digits and '-'; fix: rename"
    )


def test_the_static_l2_volume_is_refused_for_endpoints_in_two_namespaces() -> None:
    """One PersistentVolume binds one claim; every endpoint namespace has its own curvine-pvc."""
    base = {**BASE["kvcache"]["endpoints"][0], "replicas": 1, "rollout": "scale_down_first"}
    two = {"kvcache.endpoints": [base, {**base, "name": "b", "namespace": "other"}]}
    field = "kvcache.curvine.static_pv.enabled"
    assert refusal({**two, field: True}) == (
        f"{SOURCE}: {field} = True: allowed: false while the endpoints on curvine use more than "
        "one namespace (inference, other): the static PersistentVolume binds one claim; fix: put "
        "those endpoints in one namespace, or set static_pv.enabled: false (dynamic provisioning "
        "gives each namespace its own volume on curvine-sc)"
    )
    assert refusal({**two, field: False}) is None
    assert refusal({field: True}) is None


def test_the_static_l2_volume_counts_only_the_namespaces_of_endpoints_on_curvine() -> None:
    """An endpoint on tieredstorage or none has no claim: its namespace binds nothing."""
    base = {**BASE["kvcache"]["endpoints"][0], "replicas": 1, "rollout": "scale_down_first"}
    for backend in ("tieredstorage", "none"):
        other = {**base, "name": "b", "namespace": "other", "l2_backend": backend}
        overrides = {"kvcache.endpoints": [base, other], "kvcache.curvine.static_pv.enabled": True}
        assert refusal(overrides) is None, backend
