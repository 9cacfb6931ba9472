"""assets/lifecycle/on_create.sh run against a fake root for both node images.

No double of AWS: the script runs under bash with ROOT pointing at a temporary directory laid out
like an Amazon Linux 2 or Amazon Linux 2023 HyperPod node, and MOUNTPOINT / SYSTEMCTL / MOUNT
replaced by small fakes that record their calls (the script's own test hooks).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "assets" / "lifecycle" / "on_create.sh"
AL2023_CONFIG = """version = 2
root = "/var/lib/containerd"
state = "/run/containerd"

[plugins."io.containerd.grpc.v1.cri"]
sandbox_image = "localhost/kubernetes/pause"
"""
AL2_CONFIG = """version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
"""
DATA_ROOT = "/opt/sagemaker/containerd/data-root"


def fake(bin_dir: Path, name: str, body: str) -> Path:
    path = bin_dir / name
    path.write_text(f"#!/bin/bash\n{body}\n")
    path.chmod(0o755)
    return path


def node(tmp_path: Path, version_id: str) -> tuple[Path, dict[str, str]]:
    root = tmp_path / "root"
    for d in ("etc", "opt/sagemaker", "opt/dlami/nvme", "var/lib"):
        (root / d).mkdir(parents=True)
    (root / "etc/os-release").write_text(f'NAME="Amazon Linux"\nVERSION_ID="{version_id}"\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    # Mounted: the EBS volume and the NVMe; /var/lib/kubelet is not (so it gets bind-mounted).
    mountpoint = fake(
        bin_dir,
        "mountpoint",
        f'case "$2" in {root}/opt/sagemaker|{root}/opt/dlami/nvme) exit 0;; *) exit 1;; esac',
    )
    systemctl = fake(bin_dir, "systemctl", f'echo "systemctl $*" >> {calls}')
    mount = fake(bin_dir, "mount", f'echo "mount $*" >> {calls}')
    env = {
        **os.environ,
        "ROOT": str(root),
        "MOUNTPOINT": str(mountpoint),
        "SYSTEMCTL": str(systemctl),
        "MOUNT": str(mount),
    }
    return root, env


def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_script_parses() -> None:
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True, timeout=30)


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_shellcheck_is_clean() -> None:
    subprocess.run(["shellcheck", str(SCRIPT)], check=True, timeout=60)


def test_al2023_gets_a_config_on_ebs_and_a_systemd_drop_in(tmp_path: Path) -> None:
    root, env = node(tmp_path, "2023")
    (root / "etc/containerd").mkdir(parents=True)
    (root / "etc/containerd/config.toml").write_text(AL2023_CONFIG)
    result = run(env)
    assert result.returncode == 0, result.stderr
    config = (root / "opt/sagemaker/containerd/config.toml").read_text()
    assert f'root = "{DATA_ROOT}"' in config
    assert '"/var/lib/containerd"' not in config
    assert 'sandbox_image = "localhost/kubernetes/pause"' in config  # the node's own settings
    assert (root / DATA_ROOT.lstrip("/")).is_dir()
    dropin = (root / "etc/systemd/system/containerd.service.d/10-root-on-ebs.conf").read_text()
    assert "ExecStart=\n" in dropin
    assert "ExecStart=/usr/bin/containerd --config /opt/sagemaker/containerd/config.toml" in dropin
    calls = (tmp_path / "calls").read_text()
    assert "systemctl daemon-reload" in calls
    assert f"mount --bind {root}/opt/sagemaker/kubelet {root}/var/lib/kubelet" in calls
    assert (root / "opt/dlami/nvme/curvine-data").is_dir()
    # The node's original config is left alone (the drop-in points containerd elsewhere).
    assert (root / "etc/containerd/config.toml").read_text() == AL2023_CONFIG


def test_al2_edits_the_eks_containerd_config(tmp_path: Path) -> None:
    root, env = node(tmp_path, "2")
    (root / "etc/eks/containerd").mkdir(parents=True)
    config = root / "etc/eks/containerd/containerd-config.toml"
    config.write_text(AL2_CONFIG)
    result = run(env)
    assert result.returncode == 0, result.stderr
    assert f'root = "{DATA_ROOT}"' in config.read_text()
    assert not (root / "etc/systemd/system/containerd.service.d").exists()
    # Idempotent: a second run changes nothing.
    before = config.read_text()
    assert run(env).returncode == 0
    assert config.read_text() == before
