"""Usage errors in one line, and the checks every option of every command gets by construction.

Each refusal of the command line reads ``<option> = <value>: allowed: <what>; fix: <what to
do>``, whatever refused it: typer's conversion (a word where a number belongs), a range, one of
the checks below, an unknown option or command, a missing value. The message is built from the
parameter itself (its type and bounds), so an option added to a command is covered without a
line here.

Typer converts a value with pydantic, which accepts ``nan`` and ``inf`` as numbers (and lets
``inf`` past a lower bound) and reads an empty path as the working folder: ``--out "$OUT"`` with
OUT unset. ``check_every_option`` puts two checks in front of and behind that conversion on every
parameter: a value typed empty (or blank) is refused unless empty is the option's own default,
and a number must be finite and at most ``CEILING`` either way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import typer
from pydantic import ValidationError
from typer._click import Command, Context
from typer._click.core import Parameter, ParameterSource
from typer._click.exceptions import (
    BadOptionUsage,
    BadParameter,
    MissingParameter,
    NoSuchOption,
    UsageError,
)
from typer.core import TyperGroup

from scripts.lib.errors import CliError, Exit, shown

PROGRAM = "hpkv"
# The largest number every option takes: the largest whole number a float holds exactly. A count
# or a duration past it has no meaning here, and ends in an OverflowError where it meets floats.
CEILING = 2**53


def command_path(ctx: Context | None) -> str:
    """``hpkv bench compare``: the command as the docs write it, however it was started
    (``python -m scripts`` names itself differently)."""
    names: list[str] = []
    while ctx is not None and ctx.parent is not None:
        names.insert(0, ctx.info_name or "")
        ctx = ctx.parent
    return " ".join([PROGRAM, *names])


def _bound(value: float) -> str:
    return f"{value:g}"


def allowed_for(param: Parameter) -> str:
    """What a parameter takes, from its type and bounds: ``a whole number from 1 to 65535``."""
    descriptor = getattr(param, "type_descriptor", None)
    info = getattr(descriptor, "parameter_info", None)
    annotation = getattr(descriptor, "annotation", str)
    args = getattr(annotation, "__args__", ())
    item = args[0] if args and getattr(annotation, "__origin__", None) is list else annotation
    low, high = getattr(info, "min", None), getattr(info, "max", None)
    if item is int or item is float:
        kind = "a whole number" if item is int else "a finite number"
        top = _bound(high) if high is not None else "2^53"
        bottom = _bound(low) if low is not None else "-2^53"
        return f"{kind} from {bottom} to {top}"
    if item is bool:
        return "true or false"
    if isinstance(item, type) and issubclass(item, Path):
        return "a path (not empty)"
    help_text = getattr(param, "help", None)
    return f"a value ({help_text.rstrip('.')})" if help_text else "a value (not empty)"


def _name(param: Parameter | None, hint: Any = None) -> str:
    if hint is not None:
        return hint if isinstance(hint, str) else " / ".join(hint)
    if param is None:
        return "value"
    opts = [o for o in param.opts if o.startswith("--")] or list(param.opts)
    if opts and getattr(param, "param_type_name", "") == "option":
        return opts[0]
    return (param.name or "value").upper()


def _commands(ctx: Context | None) -> str:
    if ctx is not None and isinstance(ctx.command, TyperGroup):
        return ", ".join(ctx.command.list_commands(ctx))
    return "the commands `hpkv --help` lists"


def usage_failure(exc: UsageError) -> CliError:
    """One line for a usage error of the command line (typer's own is a framed block): what,
    the value as given, what is allowed, and where the options are described."""
    where = command_path(exc.ctx)
    fix = f"see `{where} --help`"
    if isinstance(exc, MissingParameter):
        name = _name(exc.param, exc.param_hint)
        allowed = allowed_for(exc.param) if exc.param is not None else "a value"
        return _line(name, MISSING, allowed, f"give {name}; {fix}")
    if isinstance(exc, BadParameter):
        name = _name(exc.param, exc.param_hint)
        cause = exc.__cause__
        if isinstance(cause, ValidationError) and exc.param is not None:
            return _line(name, cause.errors()[0]["input"], allowed_for(exc.param), fix)
        if isinstance(exc, Refused):
            return _line(name, exc.value, exc.allowed, exc.fix or fix)
        allowed = allowed_for(exc.param) if exc.param is not None else "a value"
        return _line(name, exc.message.rstrip("."), allowed, fix)  # typer's words for it
    if isinstance(exc, NoSuchOption):
        maybe = f" (did you mean {', '.join(exc.possibilities)}?)" if exc.possibilities else ""
        return _line("option", exc.option_name, f"the options of `{where}`{maybe}", fix)
    if isinstance(exc, BadOptionUsage):
        if "does not take a value" in exc.message:
            allowed = f"{exc.option_name} alone: it is a flag and takes no value"
            return _line(exc.option_name, A_VALUE, allowed, fix)
        return _line(exc.option_name, MISSING, f"a value after {exc.option_name}", fix)
    message = exc.message.rstrip(".")
    if message.startswith("No such command"):
        name = message.split("'", 2)[1] if message.count("'") >= 2 else message
        return _line("command", name, _commands(exc.ctx), fix)
    if message.startswith("Got unexpected extra argument"):
        extra = message.partition(" (")[2].removesuffix(")")
        return _line("argument", extra, f"only what `{where} --help` lists", fix)
    if message == "Missing command":
        return _line("command", MISSING, _commands(exc.ctx), fix)
    return _line("command line", message, f"what `{where} --help` shows", fix)


# Said of a value that is not there, printed as it is.
MISSING, A_VALUE = "(missing)", "(a value)"


def _line(name: str, value: Any, allowed: str, fix: str) -> CliError:
    said = value if value in (MISSING, A_VALUE) else shown(value)
    return CliError(f"{name} = {said}: allowed: {allowed}; fix: {fix}", Exit.USAGE)


class Refused(BadParameter):
    """A value typer's conversion accepts but the command cannot use: what is allowed, and
    optionally the fix (default: the command's --help)."""

    def __init__(self, option: str, value: Any, allowed: str, fix: str | None = None) -> None:
        super().__init__(f"{shown(value)}: allowed: {allowed}", param_hint=option)
        self.value = value
        self.allowed = allowed
        self.fix = fix


def refused(option: str, value: Any, allowed: str, fix: str | None = None) -> typer.BadParameter:
    return Refused(option, value, allowed, fix)


# Every parameter's conversion, wrapped: (ctx, raw value) -> converted value.
Process = Callable[[Context, Any], Any]


def _typed_on_command_line(ctx: Context, param: Parameter) -> bool:
    return param.name is not None and (
        ctx.get_parameter_source(param.name) == ParameterSource.COMMANDLINE
    )


def _raw_values(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list | tuple) else [value]


def _within(item: Any) -> bool:
    """A number is finite and within CEILING (``nan`` compares false, ``inf`` is past it);
    anything else is not a number to judge here."""
    if isinstance(item, bool) or not isinstance(item, int | float):
        return True
    return abs(item) <= CEILING


BLANK = "; an empty or blank value is what an unset shell variable gives"


def _checked(param: Parameter, convert: Process) -> Process:
    """``convert`` with the checks every option gets: empty or blank refused unless empty is
    the default, numbers finite and within CEILING."""
    empty_default = param.default == "" or param.default == ()

    def process(ctx: Context, value: Any) -> Any:
        if _typed_on_command_line(ctx, param) and not empty_default:
            for blank in (v for v in _raw_values(value) if isinstance(v, str) and not v.strip()):
                raise refused(_name(param), blank, allowed_for(param) + BLANK)
        converted = convert(ctx, value)
        for item in _raw_values(converted):
            if not _within(item):
                raw = value if isinstance(value, str) else item
                raise refused(_name(param), raw, allowed_for(param))
        return converted

    return process


def _commands_under(command: Command) -> Iterator[Command]:
    yield command
    for sub in getattr(command, "commands", {}).values():
        yield from _commands_under(sub)


def _parse_in_context(command: Command) -> Callable[[Context, list[str]], list[str]]:
    """``command.parse_args`` whose usage errors name the command they belong to (typer's
    parser raises some, a missing option value among them, without it)."""
    parse = command.parse_args

    def parse_args(ctx: Context, args: list[str]) -> list[str]:
        try:
            return parse(ctx, args)
        except UsageError as exc:
            exc.ctx = exc.ctx or ctx
            raise

    return parse_args


def check_every_option(group: Command) -> None:
    """Put the checks of ``_checked`` on every parameter of every command under ``group``."""
    for command in _commands_under(group):
        if getattr(command, CHECKED, False):  # typer may hand over a command built before
            continue
        # On the instances typer built: it offers no hook around a parameter's conversion.
        command.parse_args = _parse_in_context(command)  # type: ignore[method-assign,assignment]
        for param in command.params:
            if param.name != "help":
                param.process_value = _checked(param, param.process_value)  # type: ignore[method-assign,assignment]
        setattr(command, CHECKED, True)


CHECKED = "_hpkv_checked"
