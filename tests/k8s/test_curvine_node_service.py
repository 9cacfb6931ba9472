"""Every Curvine volume the app renders is one the pinned CSI node service stages and publishes
into a Pod: the dynamic claims' (what CreateVolume provisions from curvine-sc's parameters), the
static PV's (its own volumeAttributes) and the pool's root the evictor mounts.
``tests/doubles/curvine_csi.py`` models the node service of CurvineIO/curvine v0.4.1 and refuses
the requests the driver refuses."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import AppConfig, parse_config
from k8s.app import build_charts, manifests
from k8s.l2_volume import curvine_pool_volume
from k8s.names import curvine_static_volume
from tests.doubles.curvine_csi import (
    CsiError,
    provisioned_context,
    provisioned_handle,
    publish,
    stage,
)
from tests.support.config import SOURCE, with_overrides

Obj = dict[str, Any]


def _rendered(overrides: dict[str, Any]) -> tuple[AppConfig, list[Obj]]:
    config = parse_config(with_overrides(overrides), SOURCE, "dev")
    return config, [o for objs in manifests(build_charts(config)).values() for o in objs]


def _one(objs: list[Obj], kind: str, name: str) -> Obj:
    (found,) = [o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name]
    return found


def _static_pv(path: str = "/l2cache/static") -> tuple[str, dict[str, str]]:
    config, objs = _rendered(
        {"kvcache.curvine.static_pv.enabled": True, "kvcache.curvine.static_pv.curvine_path": path}
    )
    csi = _one(objs, "PersistentVolume", curvine_static_volume(config))["spec"]["csi"]
    return csi["volumeHandle"], csi["volumeAttributes"]


def test_a_provisioned_claim_is_published_at_its_own_directory() -> None:
    _, objs = _rendered({})
    parameters = _one(objs, "StorageClass", "curvine-sc")["parameters"]
    context = provisioned_context(parameters, "pvc-5f1c2a3b")
    assert publish(provisioned_handle(context, "pvc-5f1c2a3b"), context) == "pvc-5f1c2a3b"


@pytest.mark.parametrize("path", ["/l2cache/static", "/l2cache/warm/l2"])
def test_the_static_pv_is_staged_and_published_at_its_curvine_path(path: str) -> None:
    """A static PV's handle is not the provisioner's, so staging it also runs curvine-fuse's
    validate-config on its flags; publishing needs ``curvine-path``, which the PV names: the
    Pod gets the root of the FUSE mount of its ``fs-path``, the configured Curvine path."""
    handle, attributes = _static_pv(path)
    assert handle.count("@") != 2  # not a provisioned handle: the driver validates its flags
    stage(handle, attributes)
    assert publish(handle, attributes) == ""
    assert attributes["fs-path"] == path


def test_the_double_refuses_a_static_pv_without_curvine_path() -> None:
    """What the static PV rendered before: the node service answers InvalidArgument and the
    Pod stays in ContainerCreating."""
    handle, attributes = _static_pv()
    without = {k: v for k, v in attributes.items() if k != "curvine-path"}
    with pytest.raises(CsiError) as refused:
        publish(handle, without)
    assert refused.value.code == "InvalidArgument"


def test_a_fuse_flag_v0_4_1_dropped_fails_a_static_pv_at_staging() -> None:
    """v0.4.1 renamed ``attr-timeout`` (seconds) to ``attr-timeout-ms``: a PV still passing
    the old flag is refused by validate-config instead of mounting with a default."""
    handle, attributes = _static_pv()
    with pytest.raises(CsiError) as refused:
        stage(handle, {**attributes, "attr-timeout": "1.0"})
    assert refused.value.code == "InvalidArgument"


def test_the_evictors_pool_volume_is_the_claims_fuse_mount_whole() -> None:
    """The pool's volume is staged by the FUSE process of the claims' volumes on the node (one
    mount key: no second process, no second metrics port) and published at the root of its
    mount: every claim's directory, ``pvc-...``, is inside what the evictor sees."""
    config, objs = _rendered({})
    parameters = _one(objs, "StorageClass", "curvine-sc")["parameters"]
    claim = provisioned_context(parameters, "pvc-5f1c2a3b")
    pool = _one(objs, "PersistentVolume", curvine_pool_volume(config))["spec"]["csi"]
    pool_key = stage(pool["volumeHandle"], pool["volumeAttributes"])
    assert pool_key == stage(provisioned_handle(claim, "pvc-5f1c2a3b"), claim)
    assert publish(pool["volumeHandle"], pool["volumeAttributes"]) == ""
    assert claim["curvine-path"].startswith(pool["volumeAttributes"]["curvine-path"] + "/")
