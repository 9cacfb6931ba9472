"""The runtime layer's plumbing (``make test-runtime``).

The real LMCache and vLLM of each supported image live in their own virtualenvs
(``.venv-runtime/<image tag>``, installed from ``tests/runtime/requirements/<tag>.txt``): their
pins clash with the app's, so the tests, which render with the app's code, ask them through small
oracle scripts (``tests/runtime/oracles/``) that read one JSON request on stdin and answer one
JSON object on stdout.

Each endpoint's model container is taken as it ends up in the cluster: the operator's rendering
(``tests/doubles/operator_pod.py``), then the rendered L2 policy
(``tests/doubles/kyverno_eval.py``).
A replica runs as a process whose mounts are where that Pod has them: in a mount namespace of its
own (``unshare``), the claim's subPath bound at the rendered mountPath, an emptyDir as a folder
that outlives container restarts, and a fresh /tmp per container start.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from infra.config import AppConfig
from infra.config.kvcache import EndpointConfig
from tests.doubles.kyverno_eval import apply_policy
from tests.doubles.operator_pod import operator_pod, process_env
from tests.support.config import FSX_VARIANT, TIERS_VARIANT

ROOT = Path(__file__).resolve().parents[2]
ORACLES = ROOT / "tests" / "runtime" / "oracles"
QWEN3_8B = ROOT / "tests" / "runtime" / "fixtures" / "qwen3-8b"
IMAGES_ENV = "HPKV_RUNTIME_IMAGES"
# The environments judged: the shipped ones and the variants with an FSx and with one endpoint per
# backend (curvine, tieredstorage, none).
ENVS = ("dev", "test", "prod", FSX_VARIANT, TIERS_VARIANT)
Obj = dict[str, Any]


def runtime_images() -> list[str]:
    """The image tags whose engines `make test-runtime` installed (``HPKV_RUNTIME_IMAGES``)."""
    return os.environ.get(IMAGES_ENV, "").split()


def python_of(tag: str) -> Path:
    return ROOT / ".venv-runtime" / tag / "bin" / "python"


def qwen3_8b() -> dict[str, Any]:
    """The KV shape of the default endpoint's model, for the LMCache replicas."""
    cfg = json.loads((QWEN3_8B / "config.json").read_text())
    return {
        "name": "/opt/ml/model",
        "layers": cfg["num_hidden_layers"],
        "kv_heads": cfg["num_key_value_heads"],
        "head_dim": cfg["head_dim"],
    }


@dataclass
class Container:
    """One model container as the Pod runs it: the env its process starts with, its arguments,
    and each mountPath with the host folder behind it (None: not modelled, e.g. a hostPath)."""

    env: dict[str, str]
    args: list[str]
    mounts: dict[str, Path | None] = field(default_factory=dict)
    claims: set[str] = field(default_factory=set)
    """The mountPaths backed by a PersistentVolumeClaim."""
    own: set[str] = field(default_factory=set)
    """Top-level folders of the mountPaths: on the container's own filesystem (empty in the
    image), not the host's, whether something is mounted in them or not."""


def mount_namespace_available() -> bool:
    """Root and ``unshare``: what binding a claim's folder at the rendered mountPath needs."""
    return os.geteuid() == 0 and shutil.which("unshare") is not None


needs_mount_namespace = pytest.mark.skipif(
    not mount_namespace_available(), reason="binding the claim needs root and unshare"
)


def ask(
    tag: str, oracle: str, request: Obj, container: Container | None = None, timeout: float = 300
) -> Obj:
    """Run ``oracle`` with the engines of image ``tag``; with ``container``, as a process of that
    container (its env, its mounts, a fresh /tmp)."""
    command = [str(python_of(tag)), str(ORACLES / f"{oracle}.py")]
    env = {k: v for k, v in os.environ.items() if not k.startswith("LMCACHE_")}
    if container is not None:
        command = in_container(container, command)
    proc = subprocess.run(
        command,
        input=json.dumps(request),
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    try:
        answer: Obj = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise AssertionError(
            f"oracle {oracle} ({tag}) exited {proc.returncode} without an answer:\n"
            f"{proc.stderr[-3000:]}"
        ) from None
    return answer


def _top(path: str) -> str:
    return "/" + path.strip("/").split("/")[0]


def _interpreter_prefix(python: Path) -> Path:
    """Where the virtualenv's base interpreter lives (``home`` in its pyvenv.cfg, one up)."""
    cfg = dict(
        line.split(" = ", 1)
        for line in (python.parents[1] / "pyvenv.cfg").read_text().splitlines()
        if " = " in line
    )
    return Path(cfg["home"]).parent


def _held(paths: list[Path], hidden: set[str]) -> list[Path]:
    """The paths the process needs that the container's own folders would hide."""
    return [p for p in paths if any(p.is_relative_to(base) for base in hidden)]


def in_container(
    container: Container, command: list[str], keep: tuple[Path, ...] = ()
) -> list[str]:
    """``command`` in a mount namespace where each mountPath shows its folder and /tmp is empty.
    The checkout, the interpreter and the ``keep`` folders stay where they are when they live
    under a folder the container has of its own (a checkout under /tmp, say): they are held aside
    first and bound back over the container's folders."""
    if not mount_namespace_available():
        pytest.skip("binding the claim at the rendered mountPath needs root and unshare")
    steps = ["set -e"]
    bases = sorted(container.own | {_top(t) for t, s in container.mounts.items() if s})
    for base in bases:
        if base in ("/tmp", "/dev"):
            raise AssertionError(f"{base}: a mount there is not modelled")
    held = _held([ROOT, _interpreter_prefix(Path(command[0])), *keep], {*bases, "/tmp"})
    hold = "/run/hpkv-held"
    if held:
        steps += [f"mkdir -p {hold}", f"mount -t tmpfs tmpfs {hold}"]
    for i, path in enumerate(held):
        steps += [f"mkdir {hold}/{i}", f"mount --rbind {shlex.quote(str(path))} {hold}/{i}"]
    # The container's own folders: empty tmpfs, where mount points are made (the host's stay).
    for base in bases:
        steps.append(f"mount -t tmpfs tmpfs {base}")
    for target, source in sorted(container.mounts.items()):
        if source is None:
            continue
        if source.is_dir():
            steps.append(f"mkdir -p {shlex.quote(target)}")
        else:  # a file bound where the folder should be
            steps.append(f"mkdir -p {shlex.quote(str(Path(target).parent))}")
            steps.append(f"touch {shlex.quote(target)}")
        steps.append(f"mount --bind {shlex.quote(str(source))} {shlex.quote(target)}")
    steps.append("mount -t tmpfs tmpfs /tmp")  # the container's own /tmp, new at every start
    for i, path in enumerate(held):
        quoted = shlex.quote(str(path))
        steps += [f"mkdir -p {quoted}", f"mount --rbind {hold}/{i} {quoted}"]
    env = " ".join(f"{k}={shlex.quote(v)}" for k, v in container.env.items())
    steps.append(f"exec env {env} {' '.join(shlex.quote(c) for c in command)}")
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", "\n".join(steps)]


# --- the endpoints' containers, as the cluster ends up with them ----------------------------------


def endpoint_pod(objs: list[Obj], e: EndpointConfig, operator: str) -> Obj:
    """The Pod of endpoint ``e``: the operator's rendering of its InferenceEndpointConfig, then
    the rendered L2 policy (when the environment has one) at admission."""
    (iec,) = [
        o
        for o in objs
        if o["kind"] == "InferenceEndpointConfig"
        and o["metadata"]["name"] == e.name
        and o["metadata"]["namespace"] == e.namespace
    ]
    pod = operator_pod(iec, operator)
    for policy in (o for o in objs if o["kind"] == "ClusterPolicy"):
        pod = apply_policy(policy, pod, "CREATE")
    return pod


def container_of(pod: Obj, claims: Path, pod_dir: Path) -> Container:
    """The model container of ``pod`` with its volumes on this machine: a claim as
    ``claims/<claim name>/<subPath>``, an emptyDir as ``pod_dir/<volume>`` (kept across container
    starts, as the Pod keeps it); other volumes are not modelled."""
    (model,) = pod["spec"]["containers"][:1]
    volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
    mounts: dict[str, Path | None] = {}
    claim_mounts = set()
    for m in model.get("volumeMounts") or []:
        volume = volumes[m["name"]]
        if "persistentVolumeClaim" in volume:
            claim_mounts.add(m["mountPath"])
            folder = claims / volume["persistentVolumeClaim"]["claimName"] / m.get("subPath", "")
        elif "emptyDir" in volume:
            folder = pod_dir / m["name"] / m.get("subPath", "")
        else:
            mounts[m["mountPath"]] = None
            continue
        folder.mkdir(parents=True, exist_ok=True)  # the kubelet creates a missing subPath
        mounts[m["mountPath"]] = folder
    own = {_top(m["mountPath"]) for m in model.get("volumeMounts") or []} - {"/dev", "/tmp"}
    return Container(process_env(model), list(model.get("args") or []), mounts, claim_mounts, own)


def operator_of(config: AppConfig) -> str:
    return config.addons.inference_operator.operator.version


def python_version(tag: str) -> tuple[int, int]:
    out = subprocess.run(
        [str(python_of(tag)), "-c", "import sys; print(*sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return int(out[0]), int(out[1])
