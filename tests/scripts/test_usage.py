"""``scripts.usage``: every way a command line can be wrong, not only a bad option value, ends in
one line ``error: <what> = <value>: allowed: ...; fix: ...`` and exit 2 (typer's own is a framed
block of several lines), whichever command it belongs to; ``hpkv`` alone still prints the help.
The option values themselves: tests/scripts/test_cli_properties.py.

No double: the typer app in this process (CliRunner)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scripts import cli

LINES = [
    (["--bogus"], "option = --bogus: allowed: the options of `hpkv`; fix: see `hpkv --help`"),
    (
        ["verfy"],
        "command = verfy: allowed: preflight, verify, wait-tiered-storage, patch, size, "
        "teardown, recreate, report, manifests, dashboard, bench; fix: see `hpkv --help`",
    ),
    (
        ["verify", "--prot", "1"],
        "option = --prot: allowed: the options of `hpkv verify` (did "
        "you mean --port, --endpoint, --prompt-words?); fix: see `hpkv verify --help`",
    ),
    (
        ["bench", "compare", "--out"],
        "--out = (missing): allowed: a value after --out; fix: see `hpkv bench compare --help`",
    ),
    (
        ["verify", "--json=yes"],
        "--json = (a value): allowed: --json alone: it is a flag and "
        "takes no value; fix: see `hpkv verify --help`",
    ),
    (
        ["size", "qwen2-7b", "llama-3.1-8b"],
        "argument = llama-3.1-8b: allowed: only what "
        "`hpkv size --help` lists; fix: see `hpkv size --help`",
    ),
    (
        ["size"],
        "MODEL = (missing): allowed: a value (Path to a Hugging Face config.json (or its "
        "folder), or a preset: qwen2-7b, llama-3.1-8b, llama-3.1-70b, llama-3.1-405b, mistral-7b, "
        "deepseek-v3); fix: give MODEL; see `hpkv size --help`",
    ),
    (
        ["verify", "--port", "80.5"],
        "--port = 80.5: allowed: a whole number from 1 to 65535; fix: see `hpkv verify --help`",
    ),
    (
        ["wait-tiered-storage", "--timeout-minutes", "-inf"],
        "--timeout-minutes = -inf: allowed: "
        "a finite number from 0 to 2^53; fix: see `hpkv wait-tiered-storage --help`",
    ),
    (
        ["size", "qwen2-7b", "--sessions", str(2**53 + 1)],
        f"--sessions = {2**53 + 1}: allowed: a "
        "whole number from 1 to 2^53; fix: see `hpkv size --help`",
    ),
]


@pytest.mark.parametrize(("argv", "line"), LINES, ids=[" ".join(a) for a, _ in LINES])
def test_a_wrong_command_line_is_one_line_naming_what_is_wrong(argv: list[str], line: str) -> None:
    result = CliRunner().invoke(cli.app, argv)
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [f"error: {line}"]
    assert result.stdout == ""


def test_the_largest_count_is_taken() -> None:
    """The bound is where floats stop holding whole numbers, not below it."""
    result = CliRunner().invoke(cli.app, ["size", "qwen2-7b", "--sessions", str(2**53)])
    assert result.exit_code == 0, result.output


def test_with_json_a_usage_error_is_also_one_object() -> None:
    result = CliRunner().invoke(cli.app, ["verify", "--json", "--port", "x"])
    assert result.exit_code == 2
    (printed,) = result.stdout.splitlines()
    assert json.loads(printed) == {
        "ok": False,
        "command": "verify",
        "exit_code": 2,
        "error": "--port = x: allowed: a whole number from 1 to 65535; fix: see `hpkv verify "
        "--help`",
    }


def test_hpkv_alone_prints_the_help() -> None:
    result = CliRunner().invoke(cli.app, [])
    assert result.exit_code == 2
    assert "Usage:" in result.output and "preflight" in result.output
    assert "error:" not in result.output
