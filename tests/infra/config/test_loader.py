"""The whole line a user sees for a config file that cannot be read as one (the environment, YAML
syntax, the shape of the file) and how a value is shown in it, word for word (pure parsing, no
double).

A rule's message is its user interface: ``<file>: <field> = <value>: allowed: ...; fix: ...``.
Each test here pins that line for one rule, so a reworded or dropped part is a failing test.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import ConfigError, load_config, parse_config
from infra.config.loader import CONFIG_DIR, _yaml_error
from infra.config.model import topic_name
from tests.support.config import BASE, SOURCE, with_overrides

# --- environments --------------------------------------------------------------------------------


def test_an_unknown_environment_lists_the_yaml_files_there(tmp_path: Path) -> None:
    for name in ("staging.yaml", "dev.yaml", "notes.txt", "old.yml", "schema.json"):
        (tmp_path / name).write_text("{}\n")
    with pytest.raises(ConfigError) as err:
        load_config("prod", tmp_path)
    assert str(err.value) == (
        "config: env = 'prod': allowed: dev, staging; fix: name one of them (--env <name>; "
        "app.py and cdk: -c env=<name>; make: ENV=<name>), or create config/prod.yaml"
    )


def test_an_unknown_environment_in_an_empty_directory_lists_none(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^config: env = 'dev': allowed: \(none\); fix: "):
        load_config("dev", tmp_path)


# --- derived values ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("retain", "explicit", "days"),
    [
        (True, None, 7),
        (False, None, 0),
        (True, 0, 0),
        (False, 3, 3),
        (True, 30, 30),
    ],
)
def test_fsx_backups_default_to_a_week_only_where_state_is_retained(
    retain: bool, explicit: int | None, days: int
) -> None:
    raw = with_overrides(
        {"retain_stateful_resources": retain, "kvcache.fsx.backup_retention_days": explicit}
    )
    config = parse_config(raw, SOURCE, "dev")
    assert config.kvcache.fsx.backup_days(config.retain_stateful_resources) == days


@pytest.mark.parametrize(
    ("name", "topic"),
    [
        (None, "hyperpod-kvcache-dev-kvcache-alerts"),
        ("team-alerts", "team-alerts"),
    ],
)
def test_the_alert_topic_is_named_after_the_stacks_unless_configured(
    name: str | None, topic: str
) -> None:
    config = parse_config(with_overrides({"observability.alert_topic_name": name}), SOURCE, "dev")
    assert topic_name(config) == topic


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("x" * 100, repr("x" * 100)),  # text is the user's own: shown whole, quoted
        (None, "(missing)"),
        (["x" * 76], repr(["x" * 76])),  # a repr of exactly 80 characters: whole
        (["x" * 77], repr(["x" * 77])[:77] + "..."),  # 81: cut to 80, the last three "..."
    ],
)
def test_a_value_is_shown_quoted_missing_or_cut_to_eighty_characters(
    value: Any, shown: str
) -> None:
    """A long list or mapping must not push the allowed values and the fix off the line."""
    assert len(repr(["x" * 76])) == 80
    error = ConfigError(SOURCE, "kvcache.x", value, "a", "b")
    assert str(error) == f"{SOURCE}: kvcache.x = {shown}: allowed: a; fix: b"


def test_the_one_line_is_also_what_repr_and_args_carry() -> None:
    """Loggers and test reports print an exception's args or repr, not only its str."""
    error = ConfigError(SOURCE, "region", "mars-1", "an AWS region", "pick one")
    line = f"{SOURCE}: region = 'mars-1': allowed: an AWS region; fix: pick one"
    assert error.args == (line,)
    assert repr(error) == f"ConfigError({line!r})"


# --- the file itself: YAML syntax, shape, and the environment it names ---------------------------


def _load_error(tmp_path: Path, env: str, text: str) -> str:
    (tmp_path / f"{env}.yaml").write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(env, tmp_path)
    assert "\n" not in str(err.value)
    return str(err.value)


def test_a_yaml_syntax_error_is_one_line_naming_the_line_as_written_and_what_was_expected(
    tmp_path: Path,
) -> None:
    text = 'environment: bad\nregion: [us-west-2\naccount: "1"\n'
    assert _load_error(tmp_path, "bad", text) == (
        "config/bad.yaml: line 3, column 8 = 'account: \"1\"': allowed: valid YAML; fix: fix the "
        "YAML syntax: expected ',' or ']', but got ':' (while parsing a flow sequence at line 2)"
    )


def test_a_character_yaml_refuses_is_one_line_too(tmp_path: Path) -> None:
    assert _load_error(tmp_path, "ctl", "a: 1\nb: \x07\n") == (
        "config/ctl.yaml: file = (missing): allowed: valid YAML; fix: fix the YAML syntax: "
        'unacceptable character #x0007: special characters are not allowed in "<unicode '
        'string>", position 8'
    )


def test_a_file_that_is_not_a_mapping_is_refused(tmp_path: Path) -> None:
    assert _load_error(tmp_path, "list", "- a\n- b\n") == (
        "config/list.yaml: (top level) = ['a', 'b']: allowed: a mapping of keys; "
        "fix: see config/dev.yaml"
    )


def test_an_empty_file_asks_for_the_first_required_key(tmp_path: Path) -> None:
    assert _load_error(tmp_path, "empty", "") == (
        "config/empty.yaml: account = (missing): allowed: a value (required); "
        "fix: add account to config/empty.yaml"
    )


def test_a_file_is_the_environment_it_is_named_after(tmp_path: Path) -> None:
    """The file's name is the environment: stack names and the lock follow it."""
    dev = (CONFIG_DIR / "dev.yaml").read_text()
    assert _load_error(tmp_path, "staging", dev) == (
        "config/staging.yaml: environment = 'dev': allowed: 'staging' (the file's name); "
        "fix: set environment: staging"
    )
    (tmp_path / "qa.yaml").write_text(dev.replace("environment: dev\n", ""))
    assert load_config("qa", tmp_path).environment == "qa"


def test_a_yaml_error_at_the_end_of_the_file_shows_no_line_text(tmp_path: Path) -> None:
    assert _load_error(tmp_path, "cut", "region: [us-west-2\n") == (
        "config/cut.yaml: line 2, column 1 = (missing): allowed: valid YAML; fix: fix the YAML "
        "syntax: expected ',' or ']', but got '<stream end>' (while parsing a flow sequence at "
        "line 1)"
    )


def test_a_yaml_error_without_a_problem_or_a_context_mark_still_reads_as_one_line() -> None:
    """PyYAML always sets both when it raises; the line must not break if one is missing."""
    mark = yaml.Mark("x", 0, 0, 4, None, None)
    bare = yaml.MarkedYAMLError(context="while parsing", problem_mark=mark)
    assert str(_yaml_error("config/x.yaml", "a: b\n", bare)) == (
        "config/x.yaml: line 1, column 5 = 'a: b': allowed: valid YAML; "
        "fix: fix the YAML syntax: a syntax error"
    )


def test_a_mapping_parsed_without_a_file_name_must_name_its_environment() -> None:
    """parse_config without ``env`` (a config built in Python) takes the environment from the
    mapping only: none there is a missing key, not an environment called None."""
    raw = {k: v for k, v in BASE.items() if k != "environment"}
    with pytest.raises(ConfigError) as err:
        parse_config(raw, SOURCE)
    assert str(err.value) == (
        f"{SOURCE}: environment = (missing): allowed: a value (required); "
        f"fix: add environment to {SOURCE}"
    )


# --- YAML's readings of plain scalars ------------------------------------------------------------


def _dev_with(tmp_path: Path, old: str, new: str) -> str:
    text = (Path(__file__).resolve().parents[3] / "config" / "dev.yaml").read_text()
    assert old in text
    return _load_error(tmp_path, "dev", text.replace(old, new, 1))


@pytest.mark.parametrize("word", ["on", "Off", "yes", "NO"])
def test_a_yaml_1_1_boolean_word_where_text_belongs_gets_the_quoting_fix(
    tmp_path: Path, word: str
) -> None:
    """PyYAML reads on/off/yes/no as booleans; the fix quotes the word as it was written."""
    line = _dev_with(tmp_path, "- name: qwen3-8b", f"- name: {word}")
    assert line.startswith("config/dev.yaml: kvcache.endpoints.0.name = ")
    assert "YAML reads on, off, yes, no, true and false as a boolean" in line
    assert f'fix: write name: "{word}" (quoted)' in line


def test_a_yaml_1_1_boolean_word_where_a_choice_belongs_lists_the_choices(tmp_path: Path) -> None:
    line = _dev_with(tmp_path, "  mode: Enable", "  mode: on")
    assert line == (
        "config/dev.yaml: tiered_storage.mode = True: allowed: 'Enable' or 'Disable' (YAML reads "
        "an unquoted on, off, yes, no, true or false as a boolean); fix: write one of them for "
        "on in config/dev.yaml"
    )


def test_a_scalar_where_a_list_belongs_is_shown_as_a_list_to_write(tmp_path: Path) -> None:
    line = _dev_with(
        tmp_path, '  public_access_cidrs: ["0.0.0.0/0"]', "  public_access_cidrs: 203.0.113.0/24"
    )
    assert line == (
        "config/dev.yaml: eks.public_access_cidrs = '203.0.113.0/24': allowed: a YAML list, e.g. "
        "[a, b] or one '- item' per line; fix: write public_access_cidrs: [203.0.113.0/24] in "
        "config/dev.yaml"
    )
