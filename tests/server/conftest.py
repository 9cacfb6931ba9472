"""Fixtures of the server layer (``make test-server``): for each supported image, real vLLM CPU
servers with the image's LMCache in process, started as the replicas of two endpoints of one
namespace run (``tests/support/vllm_server.py``): one claim, each endpoint its subPath. Started
once per image, stopped when the image's tests end or one fails to start.

The replicas:

- ``a`` and ``b``: two replicas of the first endpoint, one claim folder behind both;
- ``other``: a replica of the second endpoint (the same claim, its own subPath);
- ``chunk``: a replica of the first endpoint whose LMCache chunks by 512 tokens, not 256;
- ``degraded``: a replica of the first endpoint without the CPU copy: its LMCache falls back to
  recompute, as on a node where any part of LMCache's start fails;
- ``l1``: the replica of a third endpoint, ``l2_backend: none`` (LMCache's CPU tier only).

Every image gets ``a``, ``b`` and ``degraded``; the recommended image the others too. ``a`` and
``b`` start with the image's tests, each other replica at its first use beside the next one the
tests use (``Fleet``).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.config import AppConfig
from infra.config.images import RECOMMENDED
from infra.config.kvcache import EndpointConfig
from tests.support.runtime import (
    container_of,
    endpoint_pod,
    mount_namespace_available,
    operator_of,
)
from tests.support.vllm_server import (
    CPU_CONNECTOR,
    Server,
    default_hash_is_stable,
    python_of,
    rendered_endpoints,
    server_images,
    start,
    stop,
    wait_ready,
)

ALL_ROLES = ("a", "b", "other", "chunk", "degraded", "l1")
ROLES = ("a", "b", "degraded")
CORE = ("a", "b")
# The other replicas in the order the tests first use them. Each starts beside the next: on two
# cores two starts together took 34 s, one alone 31 s.
FIRST_USE = ("other", "l1", "chunk", "degraded")
EXTRAS = 3
OTHER_CHUNK = "512"


class Fleet:
    """One image's replicas, by role, beside the config and Pods they run. ``a`` and ``b``
    run from the start; the others start at their first use, with the next in ``FIRST_USE``
    not started yet, and at most ``EXTRAS`` of them run at once (the least recently used stops
    first): each is a vLLM of about 2 GB."""

    def __init__(
        self,
        image: str,
        config: AppConfig,
        pods: dict[str, dict[str, Any]],
        roles: tuple[str, ...],
        launch: Callable[[str], Server],
    ) -> None:
        self.image, self.config, self.pods, self.roles = image, config, pods, roles
        self.endpoints: list[EndpointConfig] = list(config.kvcache.endpoints)
        self.servers: dict[str, Server] = {}
        self._launch, self._used = launch, [*CORE]
        self._due = [r for r in FIRST_USE if r in roles]  # not started yet

    def has(self, role: str) -> bool:
        return role in self.roles

    def start_core(self) -> None:
        for role in CORE:  # together: eager replicas share nothing they make at start
            self.servers[role] = self._launch(role)
        wait_ready([self.servers[role] for role in CORE])

    def __getitem__(self, role: str) -> Server:
        if role not in self.roles:
            pytest.skip(f"{role}: started for {RECOMMENDED} only")
        if role not in self.servers:
            batch = [role, *[r for r in self._due if r != role][:1]]
            self._due = [r for r in self._due if r not in batch]
            running = [r for r in self.servers if r not in CORE]
            # Least recently used first; one started beside another and not used yet, last.
            order = {r: i for i, r in enumerate(self._used)}
            extras = sorted(running, key=lambda r: order.get(r, len(order)))
            for old in extras[: max(0, len(extras) + len(batch) - EXTRAS)]:
                stop([self.servers.pop(old)])
            for new in batch:
                self.servers[new] = self._launch(new)
            wait_ready([self.servers[new] for new in batch])
        self._used = [*(r for r in self._used if r != role), role]
        return self.servers[role]

    def stop(self) -> None:
        stop(list(self.servers.values()))


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny-model")
    here = Path(__file__).parent / "make_model.py"
    subprocess.run(
        [str(python_of(server_images()[0])), str(here), str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


@pytest.fixture(scope="session", params=server_images())
def fleet(
    request: pytest.FixtureRequest, model_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    tag: str = request.param
    if not python_of(tag).exists():
        pytest.fail(f"no .venv-server/{tag}: run `make test-server`")
    if not mount_namespace_available():
        pytest.skip("binding the claim at the rendered mountPath needs root and unshare")
    config, objs = rendered_endpoints(tag)
    first, second, third = config.kvcache.endpoints
    operator = operator_of(config)
    of_role = {"other": second, "l1": third}
    pods = {role: endpoint_pod(objs, of_role.get(role, first), operator) for role in ALL_ROLES}
    # The chunk replica's Pod says so in its spec, as a user's edit would.
    pods["chunk"]["spec"]["containers"][0]["env"].append(
        {"name": "LMCACHE_CHUNK_SIZE", "value": OTHER_CHUNK}
    )
    work = tmp_path_factory.mktemp(f"servers-{tag}")
    claims = work / "claims"  # the claims' folders (tests read them through each container)
    stable = default_hash_is_stable(tag)
    roles = ALL_ROLES if RECOMMENDED.endswith(f":{tag}") else ROLES

    def launch(role: str) -> Server:
        container = container_of(pods[role], claims, work / f"pod-{role}")
        connector = None if role == "degraded" else CPU_CONNECTOR
        return start(tag, role, container, model_dir, work, connector, stable)

    fleet = Fleet(tag, config, pods, roles, launch)
    try:
        fleet.start_core()
        yield fleet
    finally:
        fleet.stop()
