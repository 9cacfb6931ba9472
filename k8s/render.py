"""Write the Kubernetes layer of one environment as plain YAML (``hpkv manifests``, which
``make manifests`` runs: ``--env dev --out dist/dev``).

Writes one file per chart in apply order (``00-namespaces.yaml`` ...) and records the values that
cannot change after the first deploy in ``k8s/locks/<env>.json`` (commit it). For kubectl and
GitOps it also writes ``kustomization.yaml`` (the files in apply order, with patches that give
each object its file's Argo CD sync wave: first file 0, next 1, ...) and ``README.md``: what
must exist first (Kyverno, the inference operator add-on) and a Flux layout
(docs/kubernetes-layer.md).

The charts are built from the config alone, never taken from the CDK app (where deploy-time
values are tokens), and nothing that holds an unresolved CDK token is written. With
``kvcache.l2_backend: fsx_lustre`` the file system's id, DNS name and mount name are read from the
deployed kvcache stack's outputs (AWS credentials needed); without them nothing is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from infra.config import AppConfig, load_config
from infra.config.locks import LOCK_DIR, lock_of
from infra.fsx_outputs import FileSystemUnknown, FsxVolume
from infra.unresolved import check_all, write_checked
from k8s.app import Charts, build_charts, manifests
from k8s.kyverno import kyverno_values
from k8s.policy import KYVERNO_REPOSITORY

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
# The renderer's own chart files (``Charts.ordered`` names: two digits, a dash, a name). Only
# these are removed before a render, so a chart that is off now leaves no file behind, while what
# other commands write into the same folder (`make dashboard`: alert-rules.yaml,
# grafana-dashboard.json) stays.
CHART_FILE = re.compile(r"[0-9]{2}-[a-z0-9]+(?:-[a-z0-9]+)*\.yaml")
# Custom resources whose CRD comes from outside these files (Kyverno's chart, the operator add-on):
# Argo CD's dry run must not fail before the CRD exists.
SKIP_DRY_RUN = {"ClusterPolicy", "InferenceEndpointConfig"}


def sync_wave_patch(obj: dict[str, Any], wave: int) -> dict[str, Any]:
    """A kustomize patch giving one object its file's Argo CD sync wave. The chart files stay
    exactly what CDK deploys; only `kubectl kustomize` output (what Argo CD applies) has it."""
    annotations = {SYNC_WAVE: str(wave)}
    if obj["kind"] in SKIP_DRY_RUN:
        annotations["argocd.argoproj.io/sync-options"] = "SkipDryRunOnMissingResource=true"
    group, _, version = obj["apiVersion"].rpartition("/")
    meta = obj["metadata"]
    # Equivalent mutant: the patch target's key "group" becomes "GROUP"; kustomize reads
    # kustomization.yaml with sigs.k8s.io/yaml, i.e. Go's encoding/json, which matches field names
    # case-insensitively, so `kubectl kustomize` applies the same patch
    # (`test_every_object_gets_its_files_sync_wave` passes under it)
    target = {
        "group": group,  # pragma: no mutate
        "version": version,  # pragma: no mutate
        "kind": obj["kind"],  # pragma: no mutate
        "name": meta["name"],  # pragma: no mutate
    }  # pragma: no mutate
    if "namespace" in meta:
        # Equivalent mutant: kustomize reads kustomization.yaml with sigs.k8s.io/yaml, i.e. Go's
        # encoding/json, which matches field names case-insensitively, so `kubectl kustomize`
        # applies the same patch (`test_every_object_gets_its_files_sync_wave` passes under it)
        target["namespace"] = meta["namespace"]  # pragma: no mutate
    patch = {
        "apiVersion": obj["apiVersion"],
        "kind": obj["kind"],  # pragma: no mutate
        "metadata": {"name": meta["name"], "annotations": annotations},  # pragma: no mutate
    }
    # Equivalent mutants: kustomize reads kustomization.yaml with sigs.k8s.io/yaml, i.e. Go's
    # encoding/json, which matches field names case-insensitively, so `kubectl kustomize` applies
    # the same patch (`test_every_object_gets_its_files_sync_wave` passes under it); `sort_keys`
    # None instead of False sorts the patch's keys; a YAML mapping has no order, and kustomize
    # applies the same patch
    return {"target": target, "patch": yaml.safe_dump(patch, sort_keys=False)}  # pragma: no mutate


def kustomization(files: Mapping[Path, str]) -> str:
    """``files``: each chart file and its text, in apply order."""
    patches = [
        sync_wave_patch(obj, wave)
        for wave, text in enumerate(files.values())
        for obj in yaml.safe_load_all(text)
        if obj
    ]
    body = {
        # Equivalent mutant: the Kustomization's "apiVersion" ("apiversion"): kustomize reads
        # kustomization.yaml with sigs.k8s.io/yaml, i.e. Go's encoding/json, which matches field
        # names case-insensitively, so `kubectl kustomize` applies the same patch
        # (`test_every_object_gets_its_files_sync_wave` passes under it)
        "apiVersion": "kustomize.config.k8s.io/v1beta1",  # pragma: no mutate
        "kind": "Kustomization",  # pragma: no mutate
        "resources": [f.name for f in files],
        "sortOptions": {  # pragma: no mutate
            "order": "fifo"  # pragma: no mutate
        },  # keep the files' apply order (kustomize >= 5.0)  # pragma: no mutate
        "patches": patches,  # pragma: no mutate
    }
    # Equivalent mutant: the case of the generated file's header comment; a YAML comment is read
    # by nobody but a person
    header = (
        "# Generated by `make manifests`; apply order = file order, "  # pragma: no mutate
        "Argo CD wave = file index.\n"  # pragma: no mutate
    )
    # Equivalent mutant: kustomization.yaml: a YAML mapping has no order, and kustomize applies the
    # same patch
    return header + yaml.safe_dump(body, sort_keys=False)  # pragma: no mutate


# The chart that needs Kyverno's CRDs and webhook: applied after Kyverno is installed.
POLICY_FILE = "50-l2-policy.yaml"
# The Kyverno release's values, for the `helm install` of kubectl and GitOps users.
KYVERNO_VALUES = "kyverno-values.yaml"


def _apply(out: str, names: Sequence[str]) -> str:
    """One ``kubectl apply`` of ``names``, wrapped at two files a line."""
    args = [f"-f {out}/{n}" for n in names]
    lines = [" ".join(args[i : i + 2]) for i in range(0, len(args), 2)]
    return "kubectl apply " + " \\\n  ".join(lines)


def kubectl_steps(config: AppConfig, names: Sequence[str], out: str) -> str:
    """Shell commands that apply the chart files ``names`` (apply order, as ``Charts.ordered``
    names them) from ``out`` with kubectl: those before the L2 policy, Kyverno, then the rest.
    docs/kubernetes-layer.md and dist/<env>/README.md carry them (tools/kubectl_steps.py)."""
    env, kyverno = config.environment, config.kvcache.kyverno
    split = names.index(POLICY_FILE) if POLICY_FILE in names else len(names)
    steps = [
        f"make manifests ENV={env}   # or: hpkv manifests --env {env} --out {out}",
        _apply(out, names[:split]),
    ]
    if split < len(names):
        if config.kvcache.installs_kyverno:
            steps.append(
                f"helm install kyverno kyverno --repo {KYVERNO_REPOSITORY} "
                f"--version {kyverno.chart_version} \\\n  --namespace {kyverno.namespace} "
                f"--values {out}/{KYVERNO_VALUES} --wait"
            )
        else:
            steps.append(
                f"# kvcache.kyverno.install: false: the cluster's Kyverno serves {POLICY_FILE}"
            )
        steps.append(_apply(out, names[split:]))
    return "\n".join(steps) + "\n"


def install_notes(config: AppConfig, files: list[Path]) -> str:
    """dist/<env>/README.md: what the objects need first, and the GitOps ordering."""
    env, kyverno = config.environment, config.kvcache.kyverno
    waves = "\n".join(f"| `{f.name}` | {i} |" for i, f in enumerate(files))
    return f"""# Kubernetes layer of `{env}` (generated by `make manifests ENV={env}`; do not edit)

Apply with `kubectl apply -k .` after the prerequisites, or point Argo CD or Flux at this folder.

## Prerequisites (not in these files)

- The HyperPod inference operator add-on `amazon-sagemaker-hyperpod-inference`
  `{config.addons.inference_operator.version}`, with cert-manager, the Mountpoint S3 CSI and FSx CSI
  add-ons (`make deploy` installs them; see docs/existing-cluster.md). It owns the
  `InferenceEndpointConfig` CRD that `60-endpoints.yaml` uses.
- HyperPod Tiered Storage on (`tiered_storage.mode: Enable`): every endpoint with an L2 needs it
  (the operator mounts the ai-toolkit daemon's shared memory into its Pods).
- Kyverno from its Helm chart, version `{kyverno.chart_version}`, in namespace `{kyverno.namespace}`
  (its CRDs and admission webhook must be ready before `50-l2-policy.yaml`, and the policy before
  any endpoint Pod starts):

      helm install kyverno kyverno --repo https://kyverno.github.io/kyverno/ \\
        --version {kyverno.chart_version} --namespace {kyverno.namespace} --create-namespace \\
        --values {KYVERNO_VALUES} --wait

  (`{KYVERNO_VALUES}`: the release's values as `make deploy` sets them: the admission controller
  on the system group, two replicas and a PodDisruptionBudget where the group has two nodes)

## Order

| file | Argo CD sync wave |
| --- | --- |
{waves}

With kubectl alone, from the repository's root (the same order, Kyverno before the policy):

```bash
{kubectl_steps(config, [f.name for f in files], f"dist/{env}")}```

Argo CD (it builds `kustomization.yaml`): its patches give every object
`argocd.argoproj.io/sync-wave` = its file's wave; the `ClusterPolicy` and
`InferenceEndpointConfig` also get
`argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true`. Install Kyverno as its own
Application in an earlier wave (or an earlier app in an app-of-apps).

Flux: a HelmRelease for Kyverno and a Kustomization for this folder that depends on it:

```yaml
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {{name: hyperpod-kvcache-{env}, namespace: flux-system}}
spec:
  dependsOn: [{{name: kyverno}}]   # the Kustomization holding the Kyverno HelmRelease (wait: true)
  path: ./dist/{env}
  prune: true
  wait: true
  interval: 10m
  sourceRef: {{kind: GitRepository, name: hyperpod-kvcache}}
```

Flux applies one folder in one go; to be sure the L2 policy is active before the endpoints'
Pods are created, keep `60-endpoints.yaml` in a second folder whose Kustomization has
`dependsOn: [{{name: hyperpod-kvcache-{env}}}]`.
"""


def needs_file_system(config: AppConfig) -> bool:
    return config.kvcache.uses("fsx_lustre")


def render(
    env: str, out: Path, lock_dir: Path | None = None, *, fsx: FsxVolume | None = None
) -> list[Path]:
    config = load_config(env)  # refuses a config that disagrees with its lock
    return render_config(config, out, lock_dir, fsx=fsx)


def render_config(
    config: AppConfig, out: Path, lock_dir: Path | None = None, *, fsx: FsxVolume | None = None
) -> list[Path]:
    """dist/<env>/ from the config alone. ``fsx``: the deployed file system, required with
    ``l2_backend: fsx_lustre`` (``deployed_file_system`` reads it)."""
    if needs_file_system(config) and fsx is None:
        raise FileSystemUnknown(
            f"kvcache.l2_backend = 'fsx_lustre': the L2 PersistentVolume names the deployed file "
            f"system, and none was given; fix: `make manifests ENV={config.environment}` reads it "
            "from the deployed kvcache stack"
        )
    return write(config, build_charts(config, fsx=fsx), out, lock_dir)


def write(config: AppConfig, charts: Charts, out: Path, lock_dir: Path | None = None) -> list[Path]:
    """dist/<env>/ from ``charts``: every file, or none when one holds an unresolved CDK token
    (charts built by the CDK app carry deploy-time values as tokens). ``lock_dir``: default
    k8s/locks."""
    lock_dir = lock_dir or LOCK_DIR
    texts = {
        # Equivalent mutant: the manifests: the API server and kubectl read objects, not key order
        out / f"{name}.yaml": yaml.safe_dump_all(objects, sort_keys=False)  # pragma: no mutate
        for name, objects in manifests(charts).items()
    }
    written = list(texts)
    files = {
        **texts,
        out / "kustomization.yaml": kustomization(texts),
        out / "README.md": install_notes(config, written),
        lock_dir / f"{config.environment}.json": json.dumps(lock_of(config), indent=2) + "\n",
    }
    values = out / KYVERNO_VALUES
    if config.kvcache.installs_kyverno:
        files[values] = (
            "# Generated by `make manifests`: helm install kyverno ... --values this\n"
            + (yaml.safe_dump(kyverno_values(config), sort_keys=False))
        )
    check_all(files)  # before anything is removed or written
    if values not in files:
        values.unlink(missing_ok=True)  # ours, from a render with kyverno.install on
    if out.is_dir():
        for old in out.glob("*.yaml"):
            if CHART_FILE.fullmatch(old.name) and old not in texts:
                old.unlink()
    write_checked(files)
    return written
