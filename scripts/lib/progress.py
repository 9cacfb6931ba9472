"""How long waits report: ``wait_for``, the one helper every long wait of the CLI goes through,
its ``Reporter`` (a rich progress line on a terminal, timestamped lines otherwise; plain lines
in CI too) and clock; ``Steps``, a count of steps done (a rich bar, or plain lines)."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from scripts.lib.errors import OperationError


def fmt_duration(seconds: float) -> str:
    """``42s``, ``5m07s``, ``1h02m03s``."""
    total = max(0, int(seconds))
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m{secs:02d}s"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@dataclass
class Clock:
    """Time as waits see it; tests pass a fake one so nothing really sleeps."""

    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep


# Set by GitHub Actions and most CI services (CI), and by CodeBuild (the nightly run).
CI_VARIABLES = ("CI", "CODEBUILD_BUILD_ID")


@dataclass
class Reporter:
    """Where a long wait reports and how: a rich progress line on a terminal, otherwise plain
    timestamped lines (one every ``every_s`` seconds, and one whenever the state changes).
    ``stream`` None means sys.stderr at the time of writing, so stdout keeps the JSON object."""

    stream: TextIO | None = None
    clock: Clock = field(default_factory=Clock)
    tty: bool | None = None  # None: ask the stream
    every_s: float = 30.0
    enabled: bool = True

    def out(self) -> TextIO:
        return self.stream if self.stream is not None else sys.stderr

    def is_tty(self) -> bool:
        """``tty`` when set; else whether the stream is a terminal outside CI (a CI log that
        claims a terminal would keep every redraw of a bar)."""
        if self.tty is not None:
            return self.tty
        if any(os.environ.get(k) for k in CI_VARIABLES):
            return False
        isatty = getattr(self.out(), "isatty", None)
        return bool(isatty and isatty())

    def stamp(self) -> str:
        return datetime.fromtimestamp(self.clock.wall(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def line(self, text: str) -> None:
        """One plain progress line (also on a terminal: phases, not the live bar)."""
        if self.enabled:
            print(f"{self.stamp()} {text}", file=self.out(), flush=True)


Show = bool | Reporter
Poll = Callable[[], bool | tuple[bool, str]]


def reporter(show: Show) -> Reporter:
    return show if isinstance(show, Reporter) else Reporter(enabled=show)


def _poll(check: Poll) -> tuple[bool, str]:
    got = check()
    if isinstance(got, tuple):
        return got
    return bool(got), ""


def wait_for(
    what: str,
    check: Poll,
    timeout_s: float,
    interval_s: float = 5.0,
    show: Show = True,
) -> float:
    """Poll ``check`` until it is true and return the seconds waited; raise on timeout.

    ``check`` returns a bool, or ``(done, state)`` where ``state`` says where things stand (a
    stack's status and latest event, replicas ready). Progress goes to ``show`` (a Reporter, or
    True for stderr): a rich line with the elapsed time and state on a terminal, else
    timestamped lines at a steady pace."""
    rep = reporter(show)
    clock = rep.clock
    start = clock.monotonic()
    deadline = start + timeout_s
    state = ""
    with contextlib.ExitStack() as stack:
        progress: Progress | None = None
        task = None
        if rep.enabled and rep.is_tty():
            progress = stack.enter_context(
                Progress(
                    SpinnerColumn(),
                    TextColumn("{task.description}"),
                    BarColumn(),
                    TimeElapsedColumn(),
                    console=Console(file=rep.out(), force_terminal=True),
                    get_time=clock.monotonic,
                    transient=True,
                )
            )
            task = progress.add_task(what, total=timeout_s)
        else:
            rep.line(f"waiting for {what} (up to {fmt_duration(timeout_s)})")
        last_line, last_state = start, ""
        while True:
            done, state = _poll(check)
            now = clock.monotonic()
            elapsed = now - start
            if done:
                text = f"{what}: done after {fmt_duration(elapsed)}"
                if progress is not None:
                    progress.console.print(text, markup=False, highlight=False)
                else:
                    rep.line(text)
                return elapsed
            if now >= deadline:
                last = f" (last state: {state})" if state else ""
                raise OperationError(
                    f"timed out after {fmt_duration(timeout_s)} waiting for {what}{last}"
                )
            if progress is not None and task is not None:
                label = f"{what}: {state}" if state else what
                progress.update(task, completed=elapsed, description=label)
            elif state != last_state or now - last_line >= rep.every_s:
                rep.line(f"{what}: {state or 'waiting'} ({fmt_duration(elapsed)} elapsed)")
                last_line = now
            last_state = state
            clock.sleep(min(interval_s, max(deadline - now, 0.01)))


class Steps:
    """``total`` steps of ``what``: a rich bar on a terminal; otherwise a plain line when a new
    phase starts, then one every ``Reporter.every_s`` seconds and one at the end."""

    def __init__(self, what: str, total: int, show: Show = True) -> None:
        self.rep = reporter(show)
        self.what, self.total, self.done = what, total, 0
        self._stack = contextlib.ExitStack()
        self._bar: Progress | None = None
        self._task: Any = None
        self._last = 0.0

    def __enter__(self) -> Steps:
        rep = self.rep
        if rep.enabled and rep.is_tty():
            self._bar = self._stack.enter_context(
                Progress(
                    SpinnerColumn(),
                    TextColumn("{task.description}"),
                    BarColumn(),
                    TextColumn("{task.completed}/{task.total}"),
                    TimeElapsedColumn(),
                    console=Console(file=rep.out(), force_terminal=True),
                    get_time=rep.clock.monotonic,
                    transient=True,
                )
            )
            self._task = self._bar.add_task(self.what, total=self.total)
        else:
            rep.line(f"{self.what}: {self.total} steps")
        self._last = rep.clock.monotonic()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()
        if not any(exc):
            self.rep.line(f"{self.what}: {self.done}/{self.total} done")

    def phase(self, text: str) -> None:
        if self._bar is not None:
            self._bar.update(self._task, description=f"{self.what}: {text}")
        else:
            self.rep.line(f"{self.what}: {text} ({self.done}/{self.total})")

    def advance(self, text: str) -> None:
        self.done += 1
        if self._bar is not None:
            self._bar.update(self._task, advance=1)
            return
        now = self.rep.clock.monotonic()
        if now - self._last >= self.rep.every_s:
            self.rep.line(f"{self.what}: {self.done}/{self.total} ({text})")
            self._last = now
