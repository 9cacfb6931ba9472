#!/bin/bash
# HyperPod lifecycle script (OnCreate) for the G6e and system instance groups.
#
# Storage layout this toolkit relies on:
#   /opt/sagemaker   the EBS volume of the instance group: containerd images and kubelet state,
#                    so large vLLM images never fill the root volume;
#   /opt/dlami/nvme  the instance-store NVMe: left to Curvine (L2 pool at curvine-data) and never
#                    used by containerd or kubelet.
# Idempotent: HyperPod may re-run it when a node is replaced or rebooted.
#
# containerd's root moves to the EBS volume on both node images, as AWS's reference lifecycle
# scripts do (awsome-distributed-training, 1.architectures/7.sagemaker-hyperpod-eks/
# LifecycleScripts/base-config/on_create_main.sh):
#   Amazon Linux 2 (VERSION_ID 2):       edit /etc/eks/containerd/containerd-config.toml;
#   Amazon Linux 2023 (VERSION_ID 2023, the HyperPod AMIs for Kubernetes 1.33+): that file does
#     not exist; a copy of the node's /etc/containerd/config.toml with the new root is written to
#     the EBS volume and a systemd drop-in starts containerd with it. Unlike the reference, the
#     node's own config is copied rather than a fixed one, so CPU nodes get no NVIDIA runtime.
#
# For tests only: ROOT prefixes every path, and MOUNTPOINT / SYSTEMCTL / MOUNT name the commands
# used (defaults: the real ones). On a node all four are unset.
set -euo pipefail

ROOT="${ROOT:-}"
MOUNTPOINT="${MOUNTPOINT:-mountpoint}"
SYSTEMCTL="${SYSTEMCTL:-systemctl}"
MOUNT="${MOUNT:-mount}"

LOG="$ROOT/var/log/provision/on_create.log"
mkdir -p "$(dirname "$LOG")"
exec > >(tee -a "$LOG") 2>&1
echo "on_create: $(date -u +%FT%TZ) on $(hostname)"

EBS_MOUNT=/opt/sagemaker
NVME_MOUNT=/opt/dlami/nvme
CURVINE_DATA="$NVME_MOUNT/curvine-data"
CONTAINERD_ROOT="$EBS_MOUNT/containerd/data-root"

os_version() {
  local version=""
  if [ -f "$ROOT/etc/os-release" ]; then
    # shellcheck disable=SC1091
    version="$(. "$ROOT/etc/os-release" && echo "${VERSION_ID:-}")"
  fi
  echo "$version"
}

containerd_root_al2() {
  local config="$ROOT/etc/eks/containerd/containerd-config.toml"
  if [ ! -f "$config" ]; then
    echo "on_create: Amazon Linux 2 without $config; containerd stays on the root volume" >&2
    return 0
  fi
  if grep -q "^root = \"$CONTAINERD_ROOT\"" "$config"; then
    return 0
  fi
  mkdir -p "$ROOT$CONTAINERD_ROOT"
  if grep -qE '^[# ]*root[[:space:]]*=' "$config"; then
    sed -i -E "s|^[# ]*root[[:space:]]*=.*|root = \"$CONTAINERD_ROOT\"|" "$config"
  else
    sed -i "1i root = \"$CONTAINERD_ROOT\"" "$config"
  fi
  echo "on_create: containerd root -> $CONTAINERD_ROOT (AL2 config)"
}

containerd_root_al2023() {
  local source="$ROOT/etc/containerd/config.toml"
  local config="$EBS_MOUNT/containerd/config.toml"
  local dropin="$ROOT/etc/systemd/system/containerd.service.d/10-root-on-ebs.conf"
  if [ ! -f "$source" ]; then
    echo "on_create: Amazon Linux 2023 without $source; containerd stays on the root volume" >&2
    return 0
  fi
  mkdir -p "$ROOT$CONTAINERD_ROOT" "$(dirname "$dropin")"
  if grep -qE '^[# ]*root[[:space:]]*=' "$source"; then
    sed -E "s|^[# ]*root[[:space:]]*=.*|root = \"$CONTAINERD_ROOT\"|" "$source" > "$ROOT$config"
  else
    # root is a top-level key: it must come before the first [table].
    { echo "root = \"$CONTAINERD_ROOT\""; cat "$source"; } > "$ROOT$config"
  fi
  printf '%s\n' "[Service]" "ExecStart=" "ExecStart=/usr/bin/containerd --config $config" > "$dropin"
  "$SYSTEMCTL" daemon-reload
  echo "on_create: containerd root -> $CONTAINERD_ROOT (AL2023 drop-in, config $config)"
}

if ! "$MOUNTPOINT" -q "$ROOT$EBS_MOUNT"; then
  echo "on_create: $EBS_MOUNT is not mounted; containerd and kubelet stay on the root volume" >&2
else
  version="$(os_version)"
  case "$version" in
    2) containerd_root_al2 ;;
    2023) containerd_root_al2023 ;;
    *) echo "on_create: unknown OS VERSION_ID '$version'; containerd left as it is" >&2 ;;
  esac
  # kubelet: bind-mount its state directory from the EBS volume (only if not done already).
  if ! "$MOUNTPOINT" -q "$ROOT/var/lib/kubelet"; then
    mkdir -p "$ROOT$EBS_MOUNT/kubelet" "$ROOT/var/lib/kubelet"
    if [ -z "$(ls -A "$ROOT/var/lib/kubelet")" ]; then
      "$MOUNT" --bind "$ROOT$EBS_MOUNT/kubelet" "$ROOT/var/lib/kubelet"
      grep -q " /var/lib/kubelet " "$ROOT/etc/fstab" 2>/dev/null ||
        echo "$EBS_MOUNT/kubelet /var/lib/kubelet none bind 0 0" >> "$ROOT/etc/fstab"
      echo "on_create: kubelet state -> $EBS_MOUNT/kubelet"
    else
      echo "on_create: /var/lib/kubelet already has state; left in place" >&2
    fi
  fi
fi

# The NVMe belongs to Curvine: create its data directory, never format or wipe it here.
if "$MOUNTPOINT" -q "$ROOT$NVME_MOUNT"; then
  mkdir -p "$ROOT$CURVINE_DATA"
  chmod 0750 "$ROOT$CURVINE_DATA"
  echo "on_create: Curvine data directory ready at $CURVINE_DATA"
else
  echo "on_create: no instance-store NVMe at $NVME_MOUNT (system group?)"
fi

echo "on_create: done"
