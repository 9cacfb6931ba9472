"""The example mutations, each with the named tests that must catch it.

``python -m tests.mutation.examples [NUMBER ...]`` applies each one to the working tree, runs
its tests, restores the file and reports CAUGHT or MISSED (exit 1 if any is missed). It edits
files in place: run it on a clean tree, and never in parallel with a mutmut run of the same
checkout (mutmut works on its own copy under mutants/, so that is safe).
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Example:
    what: str
    path: str
    old: str
    new: str
    tests: tuple[str, ...]


K8S = "tests/k8s/test_invariants.py"
OBJ = "tests/k8s/test_rehearsal_objects.py"
RULES = "tests/infra/config/test_rules_boundaries.py"
AUTOSCALING = "tests/infra/config/test_autoscaling_config.py"
EVICTOR = "tests/k8s/test_evictor.py"
SCALER = "tests/scripts/lib/verify/test_scaler.py"
SCALING_ALERT = "tests/infra/metrics/test_scaling_alert.py"
GPU_DRIVER = "tests/scripts/lib/test_gpu_driver.py"
LAYOUT = "tests/stacks/test_deploy_layout.py"
ORDER = "tests/stacks/test_deploy_order.py"

EXAMPLES: tuple[Example, ...] = (
    Example(
        "L2 PVC ReadWriteMany -> ReadWriteOnce",
        "k8s/l2_volume.py",
        "PersistentVolumeAccessMode.READ_WRITE_MANY",
        "PersistentVolumeAccessMode.READ_WRITE_ONCE",
        (
            f"{OBJ}::test_l2_claims_are_read_write_many",
            f"{K8S}::test_every_endpoint_pod_mounts_the_rwx_l2_claim_at_the_path_in_its_url",
        ),
    ),
    Example(
        "worker's NVMe data mount removed",
        "k8s/curvine.py",
        '[k8s.VolumeMount(name="data", mount_path=WORKER_DATA_MOUNT)],',
        "[],",
        (f"{OBJ}::test_worker_data_is_the_nvme_host_path_where_the_toml_points",),
    ),
    Example(
        "evictor high-water mark ten times too large",
        "k8s/l2_volume.py",
        "str(pool * ev.high_water_percent // 100)",
        "str(pool * ev.high_water_percent // 10)",
        (f"{K8S}::test_evictor_marks_are_the_pool_size_times_the_percentages",),
    ),
    Example(
        "CSI node plugin not privileged",
        "k8s/csi.py",
        "security_context=k8s.SecurityContext(privileged=True)",
        "security_context=hardened(k8s)",
        (f"{OBJ}::test_only_the_csi_node_plugin_is_privileged",),
    ),
    Example(
        "worker Pod labels changed, selector kept",
        "k8s/curvine.py",
        "metadata=k8s.ObjectMeta(labels=WORKER_WL.pod_labels)",
        "metadata=k8s.ObjectMeta(labels={**WORKER_WL.pod_labels, "
        '"app.kubernetes.io/name": "curvine-worker-v2"})',
        (f"{OBJ}::test_every_workload_selector_matches_its_template",),
    ),
    Example(
        "headless Service's journal port set to the RPC port",
        "k8s/curvine.py",
        "port=JOURNAL_PORT,\n                        target_port=port(k8s, JOURNAL_PORT),",
        "port=RPC_PORT,\n                        target_port=port(k8s, RPC_PORT),",
        (f"{K8S}::test_each_service_port_is_the_container_port_of_the_same_name",),
    ),
    Example(
        "FUSE metrics port changed, metrics Service kept the old one",
        "k8s/curvine.py",
        'FUSE_CONTAINER_PORTS = {"fuse-metrics": FUSE_WEB_PORT,',
        'FUSE_CONTAINER_PORTS = {"fuse-metrics": FUSE_WEB_PORT + 1,',
        (
            f"{K8S}::test_every_metrics_service_scrapes_a_port_its_pods_listen_on",
            f"{OBJ}::test_each_port_agrees_across_container_service_and_toml",
        ),
    ),
    Example(
        "vLLM --port changed, IEC invocation port kept",
        "k8s/endpoints.py",
        '"--port",\n        str(e.container_port),',
        '"--port",\n        "8080",',
        (f"{K8S}::test_vllm_listens_on_the_endpoints_invocation_and_metrics_port",),
    ),
    Example(
        "master claims retention Retain -> Delete",
        "k8s/curvine.py",
        'when_deleted="Retain"',
        'when_deleted="Delete"',
        (f"{OBJ}::test_master_claims_are_retained",),
    ),
    Example(
        "ebs-sc encryption off",
        "k8s/foundation.py",
        '"encrypted": "true"',
        '"encrypted": "false"',
        (f"{OBJ}::test_ebs_storage_class_encrypts",),
    ),
    Example(
        "HyperPod CIDR check lets a supernet of the VPC pass",
        "infra/config/rules_network.py",
        "if hp.overlaps(primary):",
        "if hp.subnet_of(primary):",
        (f"{RULES}::test_a_rule_accepts_its_boundary_and_refuses_the_value_past_it",),
    ),
    Example(
        "GPU and system groups may share a name",
        "infra/config/rules.py",
        "if app.hyperpod.gpu_group.name == app.hyperpod.system_group.name:",
        "if False:",
        (f"{RULES}::test_a_rule_accepts_its_boundary_and_refuses_the_value_past_it",),
    ),
    Example(
        "evictor low < high loosened to low <= high",
        "infra/config/rules_curvine.py",
        "cv.evictor.low_water_percent >= cv.evictor.high_water_percent",
        "cv.evictor.low_water_percent > cv.evictor.high_water_percent",
        (f"{RULES}::test_a_rule_accepts_its_boundary_and_refuses_the_value_past_it",),
    ),
    Example(
        "NVMe capacity rule counts Curvine's reserve, which is inside the capacity, again",
        "infra/config/rules_curvine.py",
        "w.capacity_gib + w.weights_cache_gib > nvme_gib",
        "w.capacity_gib + w.reserved_gib + w.weights_cache_gib > nvme_gib",
        (f"{RULES}::test_a_rule_accepts_its_boundary_and_refuses_the_value_past_it",),
    ),
    Example(
        "NVMe capacity rule ignores the operator's weights cache",
        "infra/config/rules_curvine.py",
        "w.capacity_gib + w.weights_cache_gib > nvme_gib",
        "w.capacity_gib > nvme_gib",
        (f"{RULES}::test_a_rule_accepts_its_boundary_and_refuses_the_value_past_it",),
    ),
    Example(
        "endpoints no longer wait for the add-ons (the operator's CRD)",
        "infra/environment/layout.py",
        '"endpoints": ("addons", "kvcache", "tiered-storage", "observability"),',
        '"endpoints": ("kvcache", "tiered-storage", "observability"),',
        (
            f"{ORDER}::test_endpoints_deploy_after_the_operator_and_its_csi_drivers",
            f"{LAYOUT}::test_stack_dependencies_are_the_layout_table",
        ),
    ),
    Example(
        "the endpoints' manifest no longer waits for the operator add-on",
        "stacks/composition.py",
        "*([operator.resource] if operator is not None else []),",
        "",
        (f"{LAYOUT}::test_endpoints_wait_for_operator_tiered_storage_and_l2_objects",),
    ),
    Example(
        "teardown deletes the HyperPod stack before the add-ons stack (deploy order)",
        "infra/environment/layout.py",
        "if s not in done and dependents[s] <= done]",
        "if s not in done and set(graph[s]) <= done]",
        (f"{ORDER}::test_teardown_deletes_every_stack_after_the_stacks_that_depend_on_it",),
    ),
    Example(
        "sizing ignores gpu_memory_utilization for L0",
        "scripts/lib/sizing.py",
        "gpu_memory_gib * gpu_memory_utilization",
        "gpu_memory_gib * 0.9",
        (
            "tests/scripts/lib/test_sizing.py::test_l0_is_the_gpu_memory_vllm_may_use_minus_the_weights",
        ),
    ),
    Example(
        "an explicit bootstrap_creator_admin: false read as unset",
        "infra/config/eks.py",
        "if self.bootstrap_creator_admin is not None:",
        "if self.bootstrap_creator_admin:",
        (
            "tests/infra/constructs/test_eks_cluster.py::test_the_creator_admin_setting_decides_the_creator_whatever_the_admin_list",
        ),
    ),
    Example(
        "each claim's evictor keeps its own directory only (the pool's volume mounts one claim)",
        "k8s/l2_volume.py",
        '"curvine-path": CURVINE_FS_PATH}',
        '"curvine-path": f"{CURVINE_FS_PATH}/static"}',
        (
            f"{EVICTOR}::test_two_namespaces_together_stay_within_the_pool",
            f"{EVICTOR}::test_a_resized_pool_still_evicts_the_claim_the_pods_started_before_write_to",
            f"{K8S}::test_the_evictor_reaches_every_claims_directory",
        ),
    ),
    Example(
        "the pool's volume deleted with its claim (Curvine deletes its whole curvine-path)",
        "k8s/l2_volume.py",
        'persistent_volume_reclaim_policy="Retain",\n                # "": no provisioner',
        'persistent_volume_reclaim_policy="Delete",\n                # "": no provisioner',
        (f"{K8S}::test_the_evictor_reaches_every_claims_directory",),
    ),
    Example(
        "the high-water hint sends the reader to an endpoint namespace for the evictor",
        "infra/metrics/alerts.py",
        "ns, high = config.kvcache.curvine.namespace,",
        "ns, high = config.kvcache.endpoints[0].namespace,",
        (
            "tests/k8s/test_alert_rules.py::test_the_high_water_hint_sends_the_reader_to_the_evictor_that_keeps_the_whole_pool",
        ),
    ),
    Example(
        "replicas per GPU node bounded by GPUs and CPU, not memory",
        "infra/config/node_budget.py",
        "room_cpu // per_cpu, room_mem // per_mem)",
        "room_cpu // per_cpu)",
        (f"{AUTOSCALING}::test_a_node_holds_only_as_many_replicas_as_its_memory_allows",),
    ),
    Example(
        "the operator's sidecars counted once per node, not once per replica",
        "infra/config/node_budget.py",
        "    replica += [p for p in pieces if p.what in OPERATOR_SIDECARS]\n",
        "",
        (f"{AUTOSCALING}::test_the_operators_sidecars_come_with_every_replica",),
    ),
    Example(
        "replicas per GPU node ignore the tensor-parallel size",
        "infra/config/node_budget.py",
        "min(inst.gpus // endpoint.tensor_parallel_size,",
        "min(inst.gpus,",
        (
            f"{AUTOSCALING}::test_a_node_holds_as_many_replicas_as_its_gpus_divided_by_their_tensor_parallel_size",
        ),
    ),
    Example(
        "KEDA's role trusts KEDA's chart-default service account, not the add-on's",
        "infra/constructs/addons/service_accounts.py",
        'KEDA_OPERATOR = ServiceAccount(OPERATOR_NAMESPACE, "keda-operator")',
        'KEDA_OPERATOR = ServiceAccount("keda", "keda-operator")',
        ("tests/stacks/test_addons.py::test_alb_and_keda_role_trust",),
    ),
    Example(
        "the scale-out workload catches only an operation error, not the API's",
        "scripts/lib/bench_compare/run.py",
        "except (OperationError, ApiException) as exc:",
        "except OperationError as exc:",
        (
            "tests/scripts/lib/bench_compare/test_run.py::test_a_replica_that_cannot_join_fails_its_tier_and_the_others_run_on",
        ),
    ),
    Example(
        "the scale-out workload catches only the API's errors, not an operation error",
        "scripts/lib/bench_compare/run.py",
        "except (OperationError, ApiException) as exc:",
        "except ApiException as exc:",
        (
            "tests/scripts/lib/bench_compare/test_run.py::test_a_replica_that_cannot_join_fails_its_tier_and_the_others_run_on",
        ),
    ),
    Example(
        "verify's scaler row accepts a ScaledObject KEDA has not judged yet",
        "scripts/lib/verify/scaler.py",
        'if ready["status"] != "True":',
        'if ready["status"] == "False":',
        (f"{SCALER}::test_a_scaler_that_cannot_scale_fails_the_row",),
    ),
    Example(
        "verify's scaler row accepts an HPA that has not computed yet",
        "scripts/lib/verify/scaler.py",
        'if computing["status"] != "True":',
        'if computing["status"] == "False":',
        (f"{SCALER}::test_a_scaler_that_cannot_scale_fails_the_row",),
    ),
    Example(
        "verify's scaler row finds the ScaledObject by owner only, not by what it scales",
        "scripts/lib/verify/scaler.py",
        "        [so for so in items if _scales(so, deployment)],\n",
        "",
        (f"{SCALER}::test_the_scaler_row_finds_the_endpoints_scaled_object_whatever_its_name",),
    ),
    Example(
        "Kyverno's namespace refused for endpoints only when the app installs Kyverno",
        "infra/config/rules_names.py",
        "if kv.uses_kyverno else {}",
        "if kv.installs_kyverno else {}",
        (
            "tests/infra/config/test_rules_names.py::test_an_endpoint_in_the_namespace_of_an_installed_kyverno_is_refused_too",
        ),
    ),
    Example(
        "a deployed stack's outputs read in the shell's Region",
        "infra/environment/outputs.py",
        'boto3.client("cloudformation", region_name=config.region)',
        'boto3.client("cloudformation")',
        ("tests/infra/environment/test_outputs.py",),
    ),
    Example(
        "scaling out refused when the new floor equals the ceiling",
        "scripts/lib/scale_endpoint.py",
        "if want > high:",
        "if want >= high:",
        (
            "tests/scripts/lib/test_scale_endpoint.py::test_an_endpoint_one_below_its_maximum_may_reach_it",
        ),
    ),
    Example(
        "make versions takes every short pin for a floating one",
        "tools/versions/report.py",
        'floating=kind == "github"',
        "floating=True",
        (
            "tests/tools/test_versions.py::test_a_short_pin_outside_github_is_that_exact_release_not_its_newest_patch",
        ),
    ),
    Example(
        "the TTFT signal left out of the at-max alert",
        "infra/metrics/scaling.py",
        "    for e in autoscaled(config):",
        '    for e in [e for e in autoscaled(config) if _autoscaling(e).signal != "ttft_p95"]:',
        (f"{SCALING_ALERT}::test_the_at_max_alert_watches_the_ttft_signal_too",),
    ),
    Example(
        "the TTFT signal left out of the scaling panels",
        "infra/metrics/dashboards.py",
        "    if e.autoscaling is None:",
        '    if e.autoscaling is None or e.autoscaling.signal == "ttft_p95":',
        (f"{SCALING_ALERT}::test_every_signal_has_its_panel_beside_the_replicas",),
    ),
    Example(
        "Regions without published zone ids refused outright",
        "infra/config/rules_network.py",
        "if ids and az_id not in ids:",
        "if az_id not in ids:",
        (
            "tests/infra/config/test_rules_aws_limits.py::test_a_region_whose_zone_ids_are_not_published_checks_its_names_only",
        ),
    ),
    Example(
        "verify --chaos keeps across the worker's loss the prefix the scale-out stage sent",
        "scripts/lib/verify/chaos.py",
        "L2_KEPT: 34}",
        "L2_KEPT: 33}",
        (
            "tests/scripts/lib/verify/test_chaos.py::test_every_stage_writes_a_prefix_of_its_own_and_reads_it_once",
        ),
    ),
    Example(
        "SageMaker model names not prefixed with the environment",
        "k8s/endpoints.py",
        "model_name=sagemaker_model_name(config, e),",
        "model_name=e.name,",
        (
            "tests/infra/config/test_rules_names.py::test_each_environment_names_its_own_sagemaker_endpoint_and_model",
        ),
    ),
    Example(
        "preflight takes another deploy's endpoint of the bare name for this environment's",
        "scripts/lib/preflight/account.py",
        'if not cfg.kvcache.endpoints or not _deployed(clients, stack_name(cfg, "endpoints")):',
        "if not cfg.kvcache.endpoints:",
        (
            "tests/scripts/lib/preflight/test_account.py::test_an_old_name_is_not_this_environments_without_its_endpoints_stack",
        ),
    ),
    Example(
        "the GPU driver row lets a node whose driver stops at CUDA 12 pass",
        "scripts/lib/gpu_driver.py",
        "has is not None and has[0] < cuda[0]",
        "has is not None and has[0] < cuda[0] - 1",
        (f"{GPU_DRIVER}::test_a_node_whose_driver_stops_at_cuda_12_fails_naming_it_and_the_fix",),
    ),
    Example(
        "the GPU driver row takes a Ready Pod of another image for proof",
        "scripts/lib/gpu_driver.py",
        'if container["image"] == image\n',
        "\n",
        (f"{GPU_DRIVER}::test_a_node_with_no_ready_pod_of_the_image_stays_unknown",),
    ),
    Example(
        "the GPU driver row ignores what PyTorch said before the Pod restarted",
        "scripts/lib/gpu_driver.py",
        "previous=restarts > 0",
        "previous=False",
        (
            f"{GPU_DRIVER}::test_a_pod_that_torch_stops_on_an_old_driver_fails_with_what_the_driver_supports",
        ),
    ),
    Example(
        "a fixed endpoint scaled out to one more than its spec, not than its running Pods",
        "scripts/lib/scale_endpoint.py",
        "max(replicas, running) + 1",
        "replicas + 1",
        (
            "tests/scripts/lib/test_scale_endpoint.py::test_one_more_than_the_pods_running_when_more_run_than_the_spec_asks",
        ),
    ),
    Example(
        "the scale-out workload takes a replica that served one request for a new one",
        "scripts/lib/bench_compare/scale_out.py",
        "if served:",
        "if served and served > 1:",
        (
            "tests/scripts/commands/test_bench_compare_scale_out.py::test_a_replica_that_served_one_request_is_not_new_either",
        ),
    ),
    Example(
        "make versions takes a pre-release pin for a floating tag",
        "tools/versions/report.py",
        "and not pin.is_prerelease:",
        ":",
        ("tests/tools/test_versions.py::test_github_releases_and_a_floating_major_tag",),
    ),
)


def check(number: int, example: Example) -> bool:
    path = ROOT / example.path
    original = path.read_text()
    assert original.count(example.old) == 1, f"{example.path}: {example.old!r} not found once"
    path.write_text(original.replace(example.old, example.new))
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *example.tests],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        path.write_text(original)
    failed = sorted(
        {
            line.split(" ")[1].split("[")[0]
            for line in run.stdout.splitlines()
            if line.startswith("FAILED ")
        }
    )
    caught = run.returncode == 1 and bool(failed)
    print(f"{number:2d} {'CAUGHT' if caught else 'MISSED'} {example.what}")
    for name in failed:
        print(f"     by {name}")
    return caught


def main(argv: list[str]) -> int:
    chosen = [int(a) for a in argv] or range(1, len(EXAMPLES) + 1)
    results = [check(n, EXAMPLES[n - 1]) for n in chosen]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
