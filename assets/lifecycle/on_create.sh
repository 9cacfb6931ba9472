#!/bin/bash
# HyperPod lifecycle script (OnCreate) for the G6e and system instance groups.
#
# Storage layout this toolkit relies on:
#   /opt/sagemaker   the EBS volume of the instance group: containerd images and kubelet state,
#                    so large vLLM images never fill the root volume;
#   /opt/dlami/nvme  the instance-store NVMe: left to Curvine (L2 pool at curvine-data) and never
#                    used by containerd or kubelet.
# Idempotent: HyperPod may re-run it when a node is replaced or rebooted.
set -euo pipefail

LOG=/var/log/provision/on_create.log
mkdir -p "$(dirname "$LOG")"
exec > >(tee -a "$LOG") 2>&1
echo "on_create: $(date -u +%FT%TZ) on $(hostname)"

EBS_MOUNT=/opt/sagemaker
NVME_MOUNT=/opt/dlami/nvme
CURVINE_DATA="$NVME_MOUNT/curvine-data"

if ! mountpoint -q "$EBS_MOUNT"; then
  echo "on_create: $EBS_MOUNT is not mounted; containerd and kubelet stay on the root volume" >&2
else
  # containerd: move its root onto the EBS volume (only if not done already).
  CONTAINERD_CONFIG=/etc/eks/containerd/containerd-config.toml
  if [ -f "$CONTAINERD_CONFIG" ] && ! grep -q "^root = \"$EBS_MOUNT/containerd\"" "$CONTAINERD_CONFIG"; then
    mkdir -p "$EBS_MOUNT/containerd"
    sed -i "s|^root = .*|root = \"$EBS_MOUNT/containerd\"|" "$CONTAINERD_CONFIG"
    grep -q '^root = ' "$CONTAINERD_CONFIG" || sed -i "1i root = \"$EBS_MOUNT/containerd\"" "$CONTAINERD_CONFIG"
    echo "on_create: containerd root -> $EBS_MOUNT/containerd"
  fi
  # kubelet: bind-mount its state directory from the EBS volume (only if not done already).
  if ! mountpoint -q /var/lib/kubelet; then
    mkdir -p "$EBS_MOUNT/kubelet" /var/lib/kubelet
    if [ -z "$(ls -A /var/lib/kubelet)" ]; then
      mount --bind "$EBS_MOUNT/kubelet" /var/lib/kubelet
      grep -q " /var/lib/kubelet " /etc/fstab ||
        echo "$EBS_MOUNT/kubelet /var/lib/kubelet none bind 0 0" >> /etc/fstab
      echo "on_create: kubelet state -> $EBS_MOUNT/kubelet"
    else
      echo "on_create: /var/lib/kubelet already has state; left in place" >&2
    fi
  fi
fi

# The NVMe belongs to Curvine: create its data directory, never format or wipe it here.
if mountpoint -q "$NVME_MOUNT"; then
  mkdir -p "$CURVINE_DATA"
  chmod 0750 "$CURVINE_DATA"
  echo "on_create: Curvine data directory ready at $CURVINE_DATA"
else
  echo "on_create: no instance-store NVMe at $NVME_MOUNT (system group?)"
fi

echo "on_create: done"
