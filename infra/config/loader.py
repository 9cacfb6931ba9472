"""Load ``config/<env>.yaml`` into an ``AppConfig``, or fail with one ``ConfigError`` line.

In order: the environment's name, the YAML (a key given twice in one mapping is refused: PyYAML
would keep the last one silently), the sections and their fields (pydantic), the rules that span
sections (``infra.config.rules``), then the environment's lock file (``infra.config.locks``),
which only ``load_config`` reads: a config parsed from a mapping is checked against the lock it is
given.
"""

from __future__ import annotations

import codecs
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from infra.config.errors import ConfigError, RuleViolation
from infra.config.locks import check_lock, read_lock
from infra.config.model import ENVIRONMENT_ALLOWED, AppConfig, environment_name
from infra.config.rules import check_rules
from infra.config.rules_names import check_names_of_other_environments
from infra.config.yaml_source import DuplicateKey, scalar_as_written, unique_key_load

CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"
REFERENCE = "docs/configuration.md"


def available_environments(config_dir: Path | None = None) -> list[str]:
    return sorted(p.stem for p in (config_dir or CONFIG_DIR).glob("*.yaml"))


def load_config(
    env: str, config_dir: Path | None = None, lock_dir: Path | None = None
) -> AppConfig:
    """``config_dir``: None reads CONFIG_DIR when called (tests point it at a folder of theirs)."""
    config_dir = config_dir or CONFIG_DIR
    _check_environment_name(env, config_dir)
    source = f"config/{env}.yaml"
    text = read_config_text(config_dir / f"{env}.yaml", source, env, config_dir)
    raw = _read_yaml(source, text)
    config = parse_config(raw, source, env, text=text)
    try:
        # The environment's lock file, read once its config is valid.
        check_lock(config, read_lock(env, lock_dir))
        check_names_of_other_environments(config, _other_environments(env, config_dir))
    except RuleViolation as cause:
        raise _rule_error(cause, source, raw) from None
    return config


def _other_environments(env: str, config_dir: Path) -> list[tuple[str, AppConfig]]:
    """The other configs of the folder that load; one that does not is refused when it is
    loaded itself, and names nothing meanwhile."""
    others = []
    for other in available_environments(config_dir):
        source = f"config/{other}.yaml"
        if other == env:
            continue
        try:
            text = read_config_text(config_dir / f"{other}.yaml", source, other, config_dir)
            others.append((source, parse_config(_read_yaml(source, text), source, other)))
        except ConfigError:
            continue
    return others


def read_config_text(path: Path, source: str, env: str, config_dir: Path) -> str:
    """The file's text, or one line on why it cannot be read as a config: missing, a folder, a
    link to nothing, a pipe or device (never opened: a pipe would block), unreadable, or not
    UTF-8 (nor UTF-16 or UTF-32 with a byte-order mark, which YAML also allows)."""
    try:
        mode = path.stat().st_mode  # follows a link
    except FileNotFoundError:
        if path.is_symlink():
            raise ConfigError(
                source,
                "file",
                str(path.readlink()),
                "a link to an existing config file",
                f"point {source} at the environment's config, or replace the link with the file",
            ) from None
        # Named by --env (scripts, k8s.render), -c env=<name> (app.py, cdk) or make's ENV=<name>.
        raise ConfigError(
            "config",
            "env",
            env,
            ", ".join(available_environments(config_dir)) or "(none)",
            f"name one of them (--env <name>; app.py and cdk: -c env=<name>; make: ENV=<name>), "
            f"or create {source}",
        ) from None
    except OSError as exc:
        raise _unreadable(source, exc) from None
    if not stat.S_ISREG(mode):
        kind = "a folder" if stat.S_ISDIR(mode) else _special_kind(mode)
        raise ConfigError(
            source,
            "file",
            kind,
            "a YAML file (copy config/dev.yaml and change what differs)",
            f"move the {kind.split()[-1]} {source} aside and write the environment's config there",
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _unreadable(source, exc) from None
    return _decode(source, data)


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"  # character or block


def _unreadable(source: str, exc: OSError) -> ConfigError:
    if isinstance(exc, PermissionError):
        return ConfigError(
            source,
            "file",
            exc.strerror,
            "a file you may read, in folders you may enter",
            f"ls -l {source} and its folders; give yourself read access (chmod u+r) or run as "
            "the file's owner",
        )
    return ConfigError(
        source,
        "file",
        exc.strerror,
        "a readable YAML file",
        f"check {source} (ls -l) and replace it with the config file",
    )


# Byte-order marks YAML allows, longest first: UTF-32-LE's begins with UTF-16-LE's.
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def _decode(source: str, data: bytes) -> str:
    """YAML's encodings: UTF-8, or UTF-16/32 with a byte-order mark (a PowerShell redirect
    writes UTF-16 with one). Anything else is named with where it stops being UTF-8."""
    encoding = next((name for bom, name in _BOMS if data.startswith(bom)), "utf-8")
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        if encoding != "utf-8" or b"\x00" in data:
            raise _not_utf8(source, line, column, data[exc.start : exc.end], "UTF-16") from None
        raise _not_utf8(source, line, column, data[exc.start : exc.end], "LATIN1") from None
    if "\x00" in text:
        # UTF-16 or UTF-32 without a byte-order mark: ASCII text with a NUL byte beside each.
        at = data.index(b"\x00")
        raise _not_utf8(source, data.count(b"\n", 0, at) + 1, 0, b"\x00", "UTF-16")
    return text


def _not_utf8(source: str, line: int, column: int, found: bytes, guess: str) -> ConfigError:
    where = f"line {line}" + (f", column {column}" if column else "")
    return ConfigError(
        source,
        f"file, {where}",
        found,
        "UTF-8 text (or UTF-16/UTF-32 with a byte-order mark)",
        f"re-save {source} as UTF-8, e.g. iconv -f {guess} -t UTF-8 {source} > utf8.yaml && "
        f"mv utf8.yaml {source}",
    )


def _looks(test: Callable[[], bool]) -> bool:
    """A look at the file system that cannot answer (a folder the user may not enter, a name
    too long) says no: reading the config then names what is wrong in one line."""
    try:
        return test()
    except OSError:
        return False


def _check_environment_name(env: str, config_dir: Path) -> None:
    """The name goes into every stack name: refused before a file of that name is looked for.
    A path given for a name (``--env config/dev.yaml``, ``--env config``) is named for what it
    is, with the name to pass instead: an environment is the name of a file in config/, beside
    its lock in k8s/locks/, so a path is never read in its place."""
    known = ", ".join(available_environments(config_dir)) or "(none)"
    how = "(--env <name>; app.py and cdk: -c env=<name>; make: ENV=<name>)"
    stem = re.sub(r"\.ya?ml$", "", re.split(r"[/\\]", env.rstrip("/\\"))[-1])
    if env != stem and _looks(lambda: (config_dir / f"{stem}.yaml").is_file()):
        raise ConfigError(
            "config",
            "env",
            env,
            f"an environment's name, not a path: the name of a file in "
            f"config/ without .yaml ({known})",
            f"pass --env {stem} (app.py and cdk: -c env={stem}; make: ENV={stem})",
        )
    is_file = _looks(lambda: (config_dir / f"{env}.yaml").is_file())
    if not is_file and _looks(lambda: Path(env).is_dir()):
        raise ConfigError(
            "config",
            "env",
            env,
            f"an environment's name ({known}); this is a folder",
            f"name an environment {how}, e.g. --env {known.split(', ')[0]}",
        )
    try:
        environment_name(env)
    except RuleViolation:
        like = _environment_like(stem)
        move = f"rename config/{env}.yaml" if env == stem else f"copy {env}"  # a path: elsewhere
        raise ConfigError(
            "config",
            "env",
            env,
            ENVIRONMENT_ALLOWED,
            f"{move} to config/{like}.yaml (and its environment: key), then "
            f"pass --env {like} (app.py and cdk: -c env={like}; make: ENV={like})",
        ) from None


def _environment_like(env: str) -> str:
    """The nearest name the rule accepts: lower case, runs of other characters as one '-'."""
    name = re.sub(r"[^a-z0-9]+", "-", env.lower()).strip("-")
    name = name if name[:1].isalpha() else f"env-{name}".rstrip("-")
    return name[:32].rstrip("-")


def _read_yaml(source: str, text: str) -> dict[str, Any]:
    try:
        raw = unique_key_load(text) or {}
    except RecursionError:
        raise ConfigError(
            source,
            "file",
            "nested too deep to read",
            "YAML nested a few levels deep, as config/dev.yaml is",
            "flatten the nesting (a config section is at most five levels deep)",
        ) from None
    except DuplicateKey as dup:
        raise ConfigError(
            source,
            f"line {dup.line}, column {dup.column}",
            dup.key,
            f"each key once in a mapping ({dup.key!r} is already at line {dup.first_line}; "
            "YAML would keep the last one and drop the first without a word)",
            f"keep one {dup.key} in that mapping (merge the two if both hold settings)",
        ) from None
    except yaml.YAMLError as exc:
        raise _yaml_error(source, text, exc) from None
    if not isinstance(raw, dict):
        raise ConfigError(source, "(top level)", raw, "a mapping of keys", "see config/dev.yaml")
    return raw


def _yaml_error(source: str, text: str, exc: yaml.YAMLError) -> ConfigError:
    """One line for a YAML syntax error: where, the line as written, what the parser expected
    (PyYAML's own message spans several lines and quotes the file as "<unicode string>")."""
    if not isinstance(exc, yaml.MarkedYAMLError) or exc.problem_mark is None:
        # A character the reader refuses, before any parsing: no line to point at.
        return ConfigError(
            source, "file", None, "valid YAML", f"fix the YAML syntax: {' '.join(str(exc).split())}"
        )
    mark = exc.problem_mark
    lines = text.splitlines()
    written = lines[mark.line].strip() if mark.line < len(lines) else None  # None: end of file
    problem = exc.problem or "a syntax error"
    context, context_mark = exc.context, exc.context_mark
    started = f" ({context} at line {context_mark.line + 1})" if context and context_mark else ""
    return ConfigError(
        source,
        f"line {mark.line + 1}, column {mark.column + 1}",
        written,
        "valid YAML",
        f"fix the YAML syntax: {problem}{started}",
    )


def parse_config(
    raw: dict[str, Any],
    source: str,
    env: str | None = None,
    *,
    lock: dict[str, Any] | None = None,
    text: str | None = None,
) -> AppConfig:
    """Validate a mapping, then the rules across sections, then ``lock`` (the environment's lock
    file; None: nothing recorded); the first problem becomes a ``ConfigError``. ``text``: the
    YAML the mapping was read from, to quote a value as it was written."""
    if env is not None and raw.get("environment", env) != env:
        raise ConfigError(
            source,
            "environment",
            raw.get("environment"),
            f"{env!r} (the file's name)",
            f"set environment: {env}",
        )
    raw = {"environment": env, **raw} if env is not None else raw
    try:
        config = AppConfig.model_validate(raw)
    except ValidationError as exc:
        raise _first_error(exc, source, text) from None
    try:
        check_rules(config)
        check_lock(config, lock)
    except RuleViolation as cause:
        raise _rule_error(cause, source, raw) from None
    return config


def _first_error(exc: ValidationError, source: str, text: str | None = None) -> ConfigError:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"])
    value = err.get("input")
    cause = (err.get("ctx") or {}).get("error")
    if isinstance(cause, RuleViolation):
        if cause.field is not None:
            return ConfigError(source, cause.field, cause.value, cause.allowed, cause.fix)
        return ConfigError(source, field, value, cause.allowed, cause.fix)
    kind = err["type"]
    if kind == "extra_forbidden":
        return ConfigError(
            source,
            field,
            value,
            f"only the keys documented in {REFERENCE}",
            "remove or rename the key (check for a typo)",
        )
    if kind == "missing":
        return ConfigError(source, field, None, "a value (required)", f"add {field} to {source}")
    if kind == "string_type" and isinstance(value, bool):
        return _unquoted_word(source, field, value, err["loc"], text)
    if kind == "string_type" and isinstance(value, int | float):
        return _unquoted_number(source, field, value, err["loc"], text)
    if kind in ("tuple_type", "list_type"):
        leaf = err["loc"][-1] if err["loc"] else field
        return ConfigError(
            source,
            field,
            value,
            "a YAML list, e.g. [a, b] or one '- item' per line",
            f"write {leaf}: [{value if value is not None else ''}] in {source}",
        )
    # pydantic's own message says what is allowed ("Input should be 'A' or 'B'", ">= 1", ...);
    # every rule of this project raises RuleViolation, handled above.
    allowed = err["msg"].removeprefix("Input should be ")
    if isinstance(value, bool) and kind == "literal_error":
        written = scalar_as_written(text, err["loc"]) if text is not None else None
        return ConfigError(
            source,
            field,
            value,
            f"{allowed} (YAML reads an unquoted on, off, yes, no, true or false as a boolean)",
            f"write one of them for {written or str(value).lower()} in {source}",
        )
    return ConfigError(source, field, value, allowed, f"change {field} in {source}")


def _unquoted_number(
    source: str, field: str, value: float, loc: tuple[int | str, ...], text: str | None
) -> ConfigError:
    """A number where text belongs: YAML reads an unquoted 1.30 as the number 1.3 (and 012 as
    10), so the fix quotes the value as written in the file, which the number no longer shows."""
    written = scalar_as_written(text, loc) if text is not None else None
    leaf = loc[-1] if loc else field
    return ConfigError(
        source,
        field,
        value,
        "text, in quotes (unquoted, YAML reads a version such as 1.30 as the number 1.3)",
        f'write {leaf}: "{written if written is not None else value}" (quoted) in {source}',
    )


def _unquoted_word(
    source: str, field: str, value: bool, loc: tuple[int | str, ...], text: str | None
) -> ConfigError:
    """A boolean where text belongs: PyYAML reads YAML 1.1's on, off, yes and no (any case) as
    true and false, so the fix quotes the word as written."""
    written = scalar_as_written(text, loc) if text is not None else None
    leaf = loc[-1] if loc else field
    return ConfigError(
        source,
        field,
        value,
        "text, in quotes (unquoted, YAML reads on, off, yes, no, true and false as a boolean)",
        f'write {leaf}: "{written if written is not None else str(value).lower()}" (quoted) '
        f"in {source}",
    )


def _rule_error(cause: RuleViolation, source: str, raw: dict[str, Any]) -> ConfigError:
    """A rule across sections names its field; one that did not would concern the whole file,
    as pydantic reports a model validator's error (no location, the whole mapping)."""
    if cause.field is not None:
        return ConfigError(source, cause.field, cause.value, cause.allowed, cause.fix)
    return ConfigError(source, "", raw, cause.allowed, cause.fix)
