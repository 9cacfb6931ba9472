"""What a command takes from where it runs: the environment's config, the AWS and Kubernetes
clients, the consoles, the progress reporter and the deploy it runs (``recreate``).

Seams for tests: replace ``CLIENTS`` (how clients are built), ``DEPLOY`` (how ``recreate`` runs
the deploy), ``PROGRESS`` (where and on which clock waits report), ``out`` and ``load_config``
here; the commands read them from this module when they run.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

from rich.console import Console

from infra.config import AppConfig, ConfigError, load_config
from infra.config.kvcache import EndpointConfig
from scripts.lib.clients import Clients
from scripts.lib.endpoints import UnknownEndpoint, resolve_endpoint
from scripts.lib.environment import cluster_names
from scripts.lib.errors import CliError, Exit, bad_option
from scripts.lib.kube import DirectPodIp, KubectlPortForward
from scripts.lib.progress import Reporter

out = Console()
err = Console(stderr=True)

ClientsFactory = Callable[[AppConfig, str | None], Clients]


def default_clients(cfg: AppConfig, context: str | None) -> Clients:
    setup = f"aws eks update-kubeconfig --name {cluster_names(cfg)[0]} --region {cfg.region}"
    return Clients(cfg.region, kube_context=context, kube_setup=setup)


def default_deploy(env: str) -> int:
    return subprocess.run(["make", "deploy", f"ENV={env}"], check=False).returncode


CLIENTS: ClientsFactory = default_clients
DEPLOY: Callable[[str], int] = default_deploy
# Where long waits report (stderr: stdout keeps the one JSON object of --json) and on which clock.
PROGRESS = Reporter()


def config(env: str) -> AppConfig:
    try:
        return load_config(env)
    except ConfigError as exc:
        raise CliError(str(exc), Exit.USAGE) from None


def endpoint(cfg: AppConfig, name: str | None, namespace: str | None) -> EndpointConfig:
    try:
        return resolve_endpoint(cfg, name, namespace)
    except UnknownEndpoint as exc:
        raise bad_option(
            exc.option,
            exc.value,
            f"an endpoint of kvcache.endpoints in {exc.source} ({exc.configured}; namespace/name)",
            "name one of them, or leave the option out for the first",
        ) from None


def fail(message: str, code: Exit = Exit.OPERATION_FAILED) -> CliError:
    return CliError(message, code)


def transport(direct: bool, context: str | None) -> Any:
    return DirectPodIp() if direct else KubectlPortForward(context=context)
