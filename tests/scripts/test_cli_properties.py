"""Outcomes, not cases: every option and argument of every command, read from the typer app
itself (a new option is covered without an edit here), given values Hypothesis draws: words
where numbers belong, numbers past each bound, ``nan`` and ``inf``, huge whole numbers, empty
strings, odd characters, URLs without a scheme, and paths to what the product must not read or
write over (a checkout's README.md, a folder of someone else's files, a Grafana dashboard where
samples belong, a picture, ``/dev/null``, ``/proc/self/mem``, a path under a file).

Each value is judged against the option's own type and bounds, and the outcome is one of two:

- a value the option cannot take (outside its type or bounds; empty where empty is not the
  default; one of the values below that no closed option accepts; a path to one of the files
  above) ends in exit 2 and exactly one line ``error: <option> = <value>: allowed: ...; fix:
  ...`` naming this option and the value as given, before anything else happens;
- any other value may run the command, which then ends with one of the documented exit codes,
  its failure in one ``error:`` line (its last), and never a traceback.

Either way the files of the folder it runs in are left byte for byte. Every option is given the
values of ``EVERY_OPTION_GETS`` it cannot take; then Hypothesis draws (option, value) pairs with a
fixed seed (``derandomize``), so a run is repeatable. A pair that once found a traceback or a
wrong line is kept as an ``@example`` on the option it was found on.

No double: the app runs in this process (typer's CliRunner) as a new user would run it, with no
AWS credentials and no kubeconfig, in a folder of files that are not the product's; the app's
commands are built once and each config file read once (both pure).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.testing
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter, ValidationError
from typer.main import get_command
from typer.testing import CliRunner

from infra.config import load_config
from scripts import cli
from scripts.lib import runtime
from scripts.lib.errors import Exit
from scripts.usage import CEILING

APP = get_command(cli.app)
ONE_LINE = re.compile(
    r"^error: (?P<where>.+?) = (?P<value>.*?): allowed: (?P<allowed>.+); "
    r"fix: (?P<fix>.+)$"
)
# Options whose value is free text by design (a kubeconfig context, a Deployment or model name,
# a note): any string may be right, so only an empty one is refused. Every other text option has
# a closed set of values (an environment, a configured endpoint, a window, a URL, a list of
# counts...), and a new one is held to that until it is named here.
OPEN = {"--context", "--deployment", "--model", "--note"}
# What a command needs beside the option under test to run at all (its required arguments), and
# what an option needs to be read at all (--samples is read only to draw --png).
NEEDS = {("size",): ["--", "qwen2-7b"]}
READ_WITH = {"--samples": ["--png=new.png"]}

# The folder every command runs in: files of someone else's, which no command may read for
# what they are not or write over.
FOREIGN = {
    "README.md": b"# my project\n",
    "kustomization.yaml": b"resources: [app.yaml]\n",
    "shot.png": b"\x89PNG\r\n\x1a\nnot the product's picture",
    "dashboard.json": b'{"title": "a Grafana dashboard", "panels": [{"type": "timeseries"}]}\n',
    "mine/notes.txt": b"notes\n",
}
# Paths to what every path option refuses: each of the files above, a folder of them, devices
# and kernel files, and a path under a file.
WORLD_PATHS = [
    "README.md",
    "kustomization.yaml",
    "shot.png",
    "dashboard.json",
    "mine",
    "/dev/null",
    "/proc/self/mem",
    "README.md/sub/x.png",
]
# Text no option with a closed set of values takes: blanks, odd characters, shell leftovers,
# URLs without a scheme or host, numbers for names.
NO_CLOSED_OPTION_TAKES = [
    " ",
    "\t",
    "a b",
    "💥",
    "é",
    "--",
    "=",
    "$(id)",
    "x" * 300,
    "..",
    "-1",
    "0",
    "1.5",
    "abc",
    "nan",
    "inf",
    "1e999",
    "localhost:8000",
    "example.com/v1",
    "//host",
    "http://",
    "ftp://h/x",
    "line\nbreak",
    "\x1b[31m",
]
NUMBERS = [
    "nan",
    "-nan",
    "NaN",
    "inf",
    "-inf",
    "Infinity",
    "1e999",
    "-1e999",
    "1,5",
    "0x10",
    "1e3",
    "1.5",
    "-1",
    "0",
    "1",
    "2",
    "65535",
    "65536",
    "1e-300",
    "1e308",
    str(2**63),
    str(10**30),
    "1" + "0" * 400,
    "\uff11\uff12",
    "٣",
]
# Anything else a command line can carry (argv holds no NUL, and no lone surrogate).
VALUES = (
    st.sampled_from(["", *NO_CLOSED_OPTION_TAKES, *WORLD_PATHS, *NUMBERS])
    | st.integers(min_value=-(10**40), max_value=10**40).map(str)
    | st.floats(allow_nan=True, allow_infinity=True).map(repr)
    | st.text(st.characters(exclude_categories=["Cs"], exclude_characters="\x00"), max_size=12)
)


@dataclass(frozen=True)
class Option:
    """One parameter of one command, as the app defines it."""

    path: tuple[str, ...]
    param: Any

    @property
    def flag(self) -> str | None:
        longs = [o for o in self.param.opts if o.startswith("--")]
        return longs[0] if longs else None

    @property
    def annotation(self) -> Any:
        annotation = self.param.type_descriptor.annotation
        args = getattr(annotation, "__args__", ())
        return args[0] if args and getattr(annotation, "__origin__", None) is list else annotation

    @property
    def is_switch(self) -> bool:
        return self.annotation is bool

    def argv(self, value: str) -> list[str]:
        given = [f"{self.flag}={value}"] if self.flag else ["--", value]
        extra = [] if self.param.param_type_name == "argument" else NEEDS.get(self.path, [])
        return [*self.path, *READ_WITH.get(self.flag or "", []), *given, *extra]

    def names(self) -> tuple[str, ...]:
        """How a refusal may name it: a flag, its name (``env``, as the config loader says
        it), an argument's metavar."""
        return (*self.param.opts, self.param.name, self.param.name.upper())

    def __str__(self) -> str:
        return " ".join([*self.path, self.flag or self.param.name.upper()])


def _options(command: Any, path: tuple[str, ...] = ()) -> Iterator[Option]:
    for name, sub in getattr(command, "commands", {}).items():
        for param in sub.params:
            if param.name != "help":
                yield Option((*path, name), param)
        yield from _options(sub, (*path, name))


OPTIONS = list(_options(APP))


def _number(option: Option, value: str) -> bool | None:
    """Whether ``value`` is a number this numeric option takes (None: not a numeric option)."""
    kind = option.annotation
    if kind not in (int, float):
        return None
    try:
        number = TypeAdapter(kind).validate_python(value)
    except ValidationError:
        return False
    info = option.param.type_descriptor.parameter_info
    low = -CEILING if info.min is None else info.min
    high = CEILING if info.max is None else info.max
    return bool(low <= number <= high)  # nan compares false


def refused(option: Option, value: str) -> bool:
    """Whether the option cannot take ``value`` whatever the rest of the command line."""
    if option.is_switch:
        return True  # a flag given a value
    taken = _number(option, value)
    if taken is not None:
        return not taken
    if value.strip() == "":
        return option.param.default not in ("", ())
    if value in WORLD_PATHS:
        return option.flag not in OPEN
    path_like = option.annotation is Path
    return not path_like and option.flag not in OPEN and value in NO_CLOSED_OPTION_TAKES


def _digests(root: Path) -> dict[str, str]:
    return {name: hashlib.sha256((root / name).read_bytes()).hexdigest() for name in FOREIGN}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("someone-elses")
    for name, content in FOREIGN.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(content)
    return root


@pytest.fixture(autouse=True)
def _new_user(world: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No AWS credentials, no kubeconfig, the working folder full of someone else's files; the
    app's commands built once (typer rebuilds them on every call: 0.1 s)."""
    for key in list(os.environ):
        if key.startswith(("AWS_", "KUBERNETES_")):
            monkeypatch.delenv(key)
    for key, value in {
        "HOME": world,
        "AWS_CONFIG_FILE": world / "none",
        "KUBECONFIG": world / "none",
        "AWS_SHARED_CREDENTIALS_FILE": world / "none",
    }.items():
        monkeypatch.setenv(key, str(value))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.chdir(world)
    monkeypatch.setattr(typer.testing, "_get_command", lambda _app: APP)
    monkeypatch.setattr(runtime, "load_config", LOADED)  # the same files: read once


# config/<env>.yaml read once per name (its YAML takes 30 ms to parse); a refusal is raised anew.
LOADED = functools.cache(load_config)


def _outcome(option: Option, value: str, world: Path) -> tuple[int, list[str], str]:
    before = _digests(world)
    result = CliRunner().invoke(cli.app, option.argv(value))
    trace = result.exception if not isinstance(result.exception, SystemExit) else None
    assert trace is None, (option.argv(value), repr(trace))
    assert "Traceback" not in result.output, result.output
    assert _digests(world) == before, f"{option.argv(value)} changed a file it did not write"
    return result.exit_code, [ln for ln in result.stderr.splitlines() if ln.strip()], result.output


def _names_the_option(option: Option, line: str, value: str) -> None:
    match = ONE_LINE.match(line)
    assert match, line
    assert any(name in match["where"] for name in option.names()), (str(option), line)
    said = "(a value)" if option.is_switch else value
    assert said in line or repr(said) in line, (said, line)


def _judge(option: Option, value: str, world: Path) -> None:
    code, lines, output = _outcome(option, value, world)
    if refused(option, value):
        assert code == Exit.USAGE, (option.argv(value), code, output)
        assert len(lines) == 1, lines
        _names_the_option(option, lines[0], value)
        return
    assert code in set(Exit), (code, output)
    errors = [ln for ln in lines if ln.startswith("error: ")]
    if code == Exit.OK:
        assert not errors, lines
    if code in (Exit.USAGE, Exit.REFUSED, Exit.OPERATION_FAILED):
        assert len(errors) == 1 and lines[-1] == errors[0], lines
    if code == Exit.USAGE:
        assert ONE_LINE.match(errors[0]), errors[0]


# Values every option is tried with: what no closed option takes, paths to what is not the
# product's, numbers past any bound; those an option takes are left to the generated values.
EVERY_OPTION_GETS = [
    "",
    " ",
    "\x1f",
    "💥",
    "localhost:8000",
    "README.md",
    "mine",
    "/dev/null",
    "/proc/self/mem",
    "nan",
    "inf",
    "-1",
    "1e999",
    "1" + "0" * 400,
]


@pytest.mark.parametrize("option", OPTIONS, ids=str)
def test_every_option_refuses_what_it_cannot_take_in_one_line(option: Option, world: Path) -> None:
    # An option that takes any text (a note, empty by default) is held to the outcomes only.
    tried = [v for v in EVERY_OPTION_GETS if refused(option, v)] or EVERY_OPTION_GETS
    for value in tried:
        _judge(option, value, world)


def _option(name: str) -> Option:
    (found,) = [o for o in OPTIONS if str(o) == name]
    return found


HUGE = "1" + "0" * 400


@settings(
    max_examples=150,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(option=st.sampled_from(OPTIONS), value=VALUES)
# What the generated values found that no example had shown, kept on the option each was found
# on: a whole number past what a float holds (an OverflowError traceback), a blank control
# character refused as empty but shown as '' instead of as given, and an --env `recreate`
# answered with its --yes refusal (exit 3) instead of naming the option.
@example(option=_option("patch --timeout-minutes"), value=HUGE)
@example(option=_option("size --gpu-nodes"), value=HUGE)
@example(option=_option("size --prompt-tokens"), value=HUGE)
@example(option=_option("verify --endpoint"), value="\x1f")
@example(option=_option("recreate --env"), value="inf")
def test_generated_values_of_every_option_end_in_a_known_outcome(
    option: Option, value: str, world: Path
) -> None:
    _judge(option, value, world)


def test_every_command_and_option_is_enumerated() -> None:
    """The enumeration is the app's: it reaches the group's subcommand and a command's
    argument, and would reach an option added to any command."""
    names = {str(o) for o in OPTIONS}
    assert {"bench compare --joining", "size MODEL", "verify --chaos", "report --window"} <= names
    assert {o.path[0] for o in OPTIONS} == set(APP.commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("option", "value", "refusal"),
    [
        ("verify --port", "1e3", True),
        ("verify --port", "443", False),
        ("verify --min-hit-ratio", "nan", True),
        ("verify --min-hit-ratio", "0.5", False),
        ("wait-tiered-storage --interval-seconds", "inf", True),
        ("size --gpu-nodes", str(10**30), True),
        ("size --gpu-nodes", "64", False),
        ("manifests --out", "", True),
        ("manifests --out", "new-folder", False),
        ("manifests --out", "README.md", True),
        ("bench compare --note", "", False),
        ("verify --context", "any-name", False),
        ("verify --endpoint", "💥", True),
        ("verify --json", "x", True),
    ],
)
def test_the_judge_of_a_value_sees_both_ways(option: str, value: str, refusal: bool) -> None:
    """The test's own judge (``refused``) is not constant: it tells a refused value from one
    the option takes, by type, bound, emptiness and the closed set."""
    assert refused(_option(option), value) is refusal
