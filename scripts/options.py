"""The options the CLI's commands share (``scripts.cli`` and ``scripts.cli_bench``), and the
state the error layer reads (whether the running command prints JSON)."""

from __future__ import annotations

from typing import Annotated

import typer


class _State:
    """What the error layer needs to know about the running command."""

    json = False


STATE = _State()


EnvOpt = Annotated[str, typer.Option("--env", "-e", help="Environment: reads config/<env>.yaml.")]


def _remember_json(value: bool) -> bool:
    STATE.json = value
    return value


JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print one JSON object instead of tables (errors too).",
        callback=_remember_json,
        is_eager=True,
    ),
]
ContextOpt = Annotated[
    str | None, typer.Option("--context", help="kubeconfig context (default: current).")
]
NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        help="Endpoint namespace (default: the first of kvcache.endpoints matching --endpoint).",
    ),
]
EndpointOpt = Annotated[
    str | None,
    typer.Option(
        "--endpoint",
        help="Endpoint name, one of kvcache.endpoints (default: the first configured).",
    ),
]
DirectOpt = Annotated[
    bool,
    typer.Option(
        "--direct", help="Reach Pods by IP (inside the VPC) instead of kubectl port-forward."
    ),
]


def ints(text: str) -> list[int]:
    """A comma-separated list of integers (``--lengths 500,1000``); empty gives []."""
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise typer.BadParameter(f"{text!r}: expected comma-separated integers") from None
