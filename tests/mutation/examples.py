"""The example mutations, each with the named tests that must catch it.

``python -m tests.mutation.examples [NUMBER ...]`` applies each one to the working tree, runs
its tests, restores the file and reports CAUGHT or MISSED (exit 1 if any is missed). It edits
files in place: run it on a clean tree, and never in parallel with a mutmut run of the same
checkout (mutmut works on its own copy under mutants/, so that is safe).
"""

# ruff: noqa: E501  (a table of source lines and test ids, kept one entry per line)
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
LAYOUT = "tests/stacks/test_deploy_layout.py"
ORDER = "tests/stacks/test_deploy_order.py"

EXAMPLES: tuple[Example, ...] = (
    Example("L2 PVC ReadWriteMany -> ReadWriteOnce", "k8s/l2_volume.py",
            "PersistentVolumeAccessMode.READ_WRITE_MANY", "PersistentVolumeAccessMode.READ_WRITE_ONCE",
            (f"{OBJ}::test_l2_claims_are_read_write_many",
             f"{K8S}::test_every_endpoint_pod_mounts_the_rwx_l2_claim_at_the_path_in_its_url")),
    Example("worker's NVMe data mount removed", "k8s/curvine.py",
            '[k8s.VolumeMount(name="data", mount_path=WORKER_DATA_MOUNT)],', "[],",
            (f"{OBJ}::test_worker_data_is_the_nvme_host_path_where_the_toml_points",)),
    Example("evictor high-water mark ten times too large", "k8s/l2_volume.py",
            "str(pool * ev.high_water_percent // 100)", "str(pool * ev.high_water_percent // 10)",
            (f"{K8S}::test_evictor_marks_are_the_pool_size_times_the_percentages",)),
    Example("CSI node plugin not privileged", "k8s/csi.py",
            "security_context=k8s.SecurityContext(privileged=True)",
            "security_context=hardened(k8s)",
            (f"{OBJ}::test_only_the_csi_node_plugin_is_privileged",)),
    Example("worker Pod labels changed, selector kept", "k8s/curvine.py",
            "metadata=k8s.ObjectMeta(labels=WORKER_WL.pod_labels)",
            'metadata=k8s.ObjectMeta(labels={**WORKER_WL.pod_labels, '
            '"app.kubernetes.io/name": "curvine-worker-v2"})',
            (f"{OBJ}::test_every_workload_selector_matches_its_template",)),
    Example("headless Service's journal port set to the RPC port", "k8s/curvine.py",
            "port=JOURNAL_PORT,\n                        target_port=port(k8s, JOURNAL_PORT),",
            "port=RPC_PORT,\n                        target_port=port(k8s, RPC_PORT),",
            (f"{K8S}::test_each_service_port_is_the_container_port_of_the_same_name",)),
    Example("FUSE metrics port changed, metrics Service kept the old one", "k8s/curvine.py",
            'FUSE_CONTAINER_PORTS = {"fuse-metrics": FUSE_WEB_PORT,',
            'FUSE_CONTAINER_PORTS = {"fuse-metrics": FUSE_WEB_PORT + 1,',
            (f"{K8S}::test_every_metrics_service_scrapes_a_port_its_pods_listen_on",
             f"{OBJ}::test_each_port_agrees_across_container_service_and_toml")),
    Example("vLLM --port changed, IEC invocation port kept", "k8s/endpoints.py",
            '"--port",\n        str(e.container_port),', '"--port",\n        "8080",',
            (f"{K8S}::test_vllm_listens_on_the_endpoints_invocation_and_metrics_port",)),
    Example("master claims retention Retain -> Delete", "k8s/curvine.py",
            'when_deleted="Retain"', 'when_deleted="Delete"',
            (f"{OBJ}::test_master_claims_are_retained",)),
    Example("ebs-sc encryption off", "k8s/foundation.py",
            '"encrypted": "true"', '"encrypted": "false"',
            (f"{OBJ}::test_ebs_storage_class_encrypts",)),
    Example("HyperPod CIDR check lets a supernet of the VPC pass",
            "infra/config/rules_network.py",
            "if hp.overlaps(primary):",
            "if hp.subnet_of(primary):",
            (f"{RULES}::test_a_rule_accepts_its_boundary_and_refuses_the_value_past_it",)),
    Example("GPU and system groups may share a name", "infra/config/rules.py",
            "if app.hyperpod.gpu_group.name == app.hyperpod.system_group.name:",
            "if False:",
            (f"{RULES}::test_a_rule_accepts_its_boundary_and_refuses_the_value_past_it",)),
    Example("evictor low < high loosened to low <= high", "infra/config/rules_curvine.py",
            "cv.evictor.low_water_percent >= cv.evictor.high_water_percent",
            "cv.evictor.low_water_percent > cv.evictor.high_water_percent",
            (f"{RULES}::test_a_rule_accepts_its_boundary_and_refuses_the_value_past_it",)),
    Example("NVMe capacity rule counts Curvine's reserve, which is inside the capacity, again",
            "infra/config/rules_curvine.py",
            "w.capacity_gib + w.weights_cache_gib > nvme_gib",
            "w.capacity_gib + w.reserved_gib + w.weights_cache_gib > nvme_gib",
            (f"{RULES}::test_a_rule_accepts_its_boundary_and_refuses_the_value_past_it",)),
    Example("NVMe capacity rule ignores the operator's weights cache", "infra/config/rules_curvine.py",
            "w.capacity_gib + w.weights_cache_gib > nvme_gib",
            "w.capacity_gib > nvme_gib",
            (f"{RULES}::test_a_rule_accepts_its_boundary_and_refuses_the_value_past_it",)),
    Example("endpoints no longer wait for the add-ons (the operator's CRD)",
            "infra/environment/layout.py",
            '"endpoints": ("addons", "kvcache", "tiered-storage", "observability"),',
            '"endpoints": ("kvcache", "tiered-storage", "observability"),',
            (f"{ORDER}::test_endpoints_deploy_after_the_operator_and_its_csi_drivers",
             f"{LAYOUT}::test_stack_dependencies_are_the_layout_table")),
    Example("the endpoints' manifest no longer waits for the operator add-on",
            "stacks/composition.py",
            "*([operator.resource] if operator is not None else []),", "",
            (f"{LAYOUT}::test_endpoints_wait_for_operator_tiered_storage_and_l2_objects",)),
    Example("teardown deletes the HyperPod stack before the add-ons stack (deploy order)",
            "infra/environment/layout.py",
            "if s not in done and dependents[s] <= done]",
            "if s not in done and set(graph[s]) <= done]",
            (f"{ORDER}::test_teardown_deletes_every_stack_after_the_stacks_that_depend_on_it",)),
    Example("sizing ignores gpu_memory_utilization for L0", "scripts/lib/sizing.py",
            "gpu_memory_gib * gpu_memory_utilization", "gpu_memory_gib * 0.9",
            ("tests/scripts/lib/test_sizing.py::test_l0_is_the_gpu_memory_vllm_may_use_minus_the_weights",)),
    Example("an explicit bootstrap_creator_admin: false read as unset", "infra/config/eks.py",
            "if self.bootstrap_creator_admin is not None:", "if self.bootstrap_creator_admin:",
            ("tests/infra/constructs/test_eks_cluster.py::test_the_creator_admin_setting_decides_the_creator_whatever_the_admin_list",)),
)  # fmt: skip


def check(number: int, example: Example) -> bool:
    path = ROOT / example.path
    original = path.read_text()
    assert original.count(example.old) == 1, f"{example.path}: {example.old!r} not found once"
    path.write_text(original.replace(example.old, example.new))
    try:
        run = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *example.tests],
            cwd=ROOT, capture_output=True, text=True, check=False,
        )  # fmt: skip
    finally:
        path.write_text(original)
    failed = sorted({line.split(" ")[1].split("[")[0] for line in run.stdout.splitlines()
                     if line.startswith("FAILED ")})  # fmt: skip
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
