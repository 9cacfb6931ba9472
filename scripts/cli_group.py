"""The typer group every ``hpkv`` command runs in: the error layer. A failure from AWS,
Kubernetes, the network or the file system, and every usage error, ends in one line on stderr
(with --json, one JSON object on stdout) and its exit code, never a traceback."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Sequence
from typing import Any

import typer
from typer._click.exceptions import NoArgsIsHelpError, UsageError
from typer.core import TyperGroup
from typer.exceptions import Abort, TyperException

from scripts.lib.errors import CliError, Exit, describe_failure
from scripts.lib.runtime import err
from scripts.options import STATE
from scripts.usage import check_every_option, command_path, usage_failure

EXIT_CODES = (
    "Exit codes: 0 ok; 1 a check or verdict failed; 2 bad option or invalid config; "
    "3 refused (prod without --allow-prod, or destructive without --yes); "
    "4 an AWS/Kubernetes operation failed or timed out."
)


def report_failure(failure: CliError, command: str | None) -> None:
    """The one way a command ends on failure: one line on stderr, and with --json one JSON
    object on stdout."""
    if STATE.json:
        print(
            json.dumps(
                {
                    "ok": False,
                    "command": command,
                    "exit_code": int(failure.code),
                    "error": failure.message,
                }
            )
        )
    line = " ".join(failure.message.splitlines())  # one line, whatever a message carried
    err.print(f"error: {line}", markup=False, highlight=False, soft_wrap=True)


class Commands(TyperGroup):
    """Runs every command inside the error-translation layer (scripts.lib.errors.describe_failure):
    a failure from AWS, Kubernetes, the network or the file system ends in one line and its
    exit code, never a traceback; so does every usage error (``scripts.usage``), whose checks
    every option of every command gets here."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        check_every_option(self)

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        """typer's own loop, with its usage errors and aborts in one line (its standalone mode
        frames them in a block, and ends an abort with exit 1, a failed check's code)."""
        run = functools.partial(
            super().main, args, prog_name, complete_var, False, windows_expand_args, **extra
        )
        if not standalone_mode:
            return run()
        try:
            code = run()
        except NoArgsIsHelpError as help_asked:  # `hpkv` alone: the help, as typer prints it
            help_asked.show()
            sys.exit(help_asked.exit_code)
        except UsageError as exc:
            report_failure(usage_failure(exc), _command(exc.ctx))
            sys.exit(Exit.USAGE)
        except Abort:  # end of input or Ctrl-C at a question: nothing was asked for
            report_failure(DECLINED, None)
            sys.exit(DECLINED.code)
        sys.exit(code if isinstance(code, int) else Exit.OK)

    def invoke(self, ctx: Any) -> Any:  # typer._click.Context (typer keeps click private)
        STATE.json = False
        try:
            return super().invoke(ctx)
        except (typer.Exit, Abort, TyperException, BrokenPipeError):
            raise  # typer's own exits and usage errors; a reader gone (`| head`): typer is quiet
        except Exception as exc:  # translated, or re-raised when not ours
            failure = describe_failure(exc)
            if failure is None:
                raise
            report_failure(failure, ctx.invoked_subcommand)
            raise typer.Exit(failure.code) from None


DECLINED = CliError(
    "refused: no answer (end of input or Ctrl-C); nothing was changed", Exit.REFUSED
)


def _command(ctx: Any) -> str | None:
    """The command a usage error belongs to, as the JSON object names it (``bench``)."""
    path = command_path(ctx).split()[1:]
    return path[0] if path else None
