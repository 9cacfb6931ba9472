"""The options the commands share, and the checks typer runs on option values when it parses them
(ranges, lists of counts, URLs); ``scripts.usage`` words the one line a refusal ends in.

A value out of range is refused before the command starts: a negative interval used to end in a
``ValueError`` traceback, a zero one polled hundreds of times a second."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

import typer

from infra.facts.instances import GPU_INSTANCES
from scripts.lib.report import WINDOW_ALLOWED, window_seconds
from scripts.lib.sizing import DTYPE_BYTES, SizingError, dtype_bytes
from scripts.usage import refused


class _State:
    """What the error layer needs to know about the running command."""

    json = False


STATE = _State()


def _remember_json(value: bool) -> bool:
    STATE.json = value
    return value


EnvOpt = Annotated[str, typer.Option("--env", "-e", help="Environment: reads config/<env>.yaml.")]
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
SeedOpt = Annotated[int | None, typer.Option(help="Prompt seed (default: new each run).")]
MaxTokensOpt = Annotated[int, typer.Option(min=1, help="Tokens generated per request.")]


def counts(text: str, option: str, *, empty_ok: bool = False) -> list[int]:
    """``"500,1000"`` -> [500, 1000]: comma-separated whole numbers of at least 1 (``empty_ok``:
    or nothing at all)."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = None
    if values is not None and all(v >= 1 for v in values) and (values or empty_ok):
        return values
    raise refused(option, text, "comma-separated whole numbers of at least 1 (e.g. 500,1000)")


def counted(option: str, *, empty_ok: bool = False) -> Callable[[str], str]:
    """A parse-time check of ``counts``: the command line is refused before anything runs."""

    def check(text: str) -> str:
        counts(text, option, empty_ok=empty_ok)
        return text

    return check


def dtype_name(option: str) -> Callable[[str | None], str | None]:
    """``--weight-dtype``/``--kv-dtype``: a dtype the sizing model knows."""

    def check(value: str | None) -> str | None:
        if value is not None:
            try:
                dtype_bytes(value)
            except SizingError:
                raise refused(
                    option,
                    value,
                    f"one of {', '.join(sorted(DTYPE_BYTES))} (torch. prefix and any case allowed)",
                ) from None
        return value

    return check


def gpu_instance_type(value: str | None) -> str | None:
    """``size --instance-type``: a GPU instance type the sizing model has figures for."""
    if value is not None and value not in GPU_INSTANCES:
        raise refused("--instance-type", value, ", ".join(GPU_INSTANCES))
    return value


def png_path(value: Path | None) -> Path | None:
    """A PNG to write: the name must say so (the plotting library picks the format by the
    suffix, and refuses most others only after the figure is drawn)."""
    if value is not None and value.suffix.lower() != ".png":
        raise refused(
            "--png",
            str(value),
            "a file path ending in .png",
            f"name the file {value.with_suffix('.png').name}",
        )
    return value


def report_window(text: str) -> str:
    try:
        window_seconds(text)
    except ValueError:
        raise refused("--window", text, WINDOW_ALLOWED) from None
    return text


def query_url(value: str | None) -> str | None:
    """``--endpoint`` of report: a Prometheus query URL with scheme and host (``host:9090``
    alone would be read as a URL of scheme "host")."""
    if value is not None:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise refused(
                "--endpoint",
                value,
                "a URL with scheme and host, like "
                "http://localhost:9090 or the AMP workspace's https://aps-workspaces."
                "<region>.amazonaws.com/workspaces/<id>",
                f"write http://{value}" if "://" not in value else None,
            )
    return value


def base_urls(values: list[str] | None) -> list[str] | None:
    """Each ``--target`` an http(s) base URL with a host: ``localhost:8000`` would be read as
    a URL of scheme "localhost" and send requests to port 80. At most two: cold, then warm."""
    if values and len(values) > 2:
        raise refused(
            "--target",
            " ".join(values),
            "one or two base URLs (the first is sent the cold requests, the second the warm ones)",
        )
    for value in values or []:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise refused(
                "--target", value, "a base URL with scheme and host, like http://127.0.0.1:8001"
            )
    return values
