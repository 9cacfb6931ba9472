"""The options the commands share, the checks typer runs on option values when it parses them
(ranges, lists of counts, URLs), and the one line a usage error ends in.

A value out of range is refused before the command starts: a negative interval used to end in a
``ValueError`` traceback, a zero one polled hundreds of times a second."""

from __future__ import annotations

from typing import Annotated
from urllib.parse import urlsplit

import typer
from pydantic import ValidationError

from scripts.lib.errors import CliError, Exit


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


def refused(option: str, value: str, allowed: str) -> typer.BadParameter:
    """A value typer's own types accept but the command cannot use."""
    return typer.BadParameter(f"{value}: allowed: {allowed}", param_hint=option)


def counts(text: str, option: str, *, empty_ok: bool = False) -> list[int]:
    """``"500,1000"`` -> [500, 1000]: comma-separated whole numbers of at least 1 (``empty_ok``:
    or nothing at all)."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = None
    if values is not None and all(v >= 1 for v in values) and (values or empty_ok):
        return values
    raise refused(option, repr(text), "comma-separated whole numbers of at least 1 (e.g. 500,1000)")


def base_urls(values: list[str] | None) -> list[str] | None:
    """Each ``--target`` an http(s) base URL with a host: ``localhost:8000`` would be read as
    a URL of scheme "localhost" and send requests to port 80. At most two: cold, then warm."""
    if values and len(values) > 2:
        raise refused("--target", " ".join(values), "one or two base URLs (the first is sent "
                      "the cold requests, the second the warm ones)")  # fmt: skip
    for value in values or []:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise refused("--target", repr(value), "a base URL with scheme and host, like "
                          "http://127.0.0.1:8001")  # fmt: skip
    return values


def usage_failure(exc: typer.TyperException, command: str | None) -> CliError:
    """One line for a usage error of a command's options (typer's own is a framed block): the
    option, the value, what is allowed, and where the options are described."""
    hint = f"see `hpkv {command} --help`" if command else "see `hpkv --help`"
    if not isinstance(exc, typer.BadParameter):  # an unknown option or command
        return CliError(f"{exc.format_message().rstrip('.')}; fix: {hint}", Exit.USAGE)
    param = exc.param_hint or (exc.param.get_error_hint() if exc.param else "value")
    where = (param if isinstance(param, str) else " / ".join(param)).replace("'", "")
    cause = exc.__cause__
    if isinstance(cause, ValidationError):  # typer's types: pydantic's first error
        first = cause.errors()[0]
        allowed = str(first["msg"]).removeprefix("Input should be ")
        detail = f"{first['input']}: allowed: {allowed}"
    else:
        detail = str(exc.message).rstrip(".")
    return CliError(f"{where} = {detail}; fix: {hint}", Exit.USAGE)
