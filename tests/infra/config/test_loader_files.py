"""A config file the loader cannot read as one gets one line saying why, never a traceback:
encodings (UTF-16 and UTF-32 with a byte-order mark load, as YAML allows; Latin-1 and UTF-16
without one are refused where they stop being UTF-8), files that are not files (a folder, a
named pipe, a device, a link to nothing or to itself), files the user may not read, YAML
nested past the parser, aliases and merge keys. Real files in a temporary folder; the
unreadable ones are read as another user when the tests run as root (root reads any file).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from infra.config import AppConfig, ConfigError, load_config
from infra.config.loader import CONFIG_DIR
from infra.config.model import placeholder_buckets

DEV = (CONFIG_DIR / "dev.yaml").read_text()
NOBODY = 65534


def renamed(env: str, text: str = DEV) -> str:
    return text.replace("environment: dev", f"environment: {env}")


def load(folder: Path, env: str) -> AppConfig | str:
    """The config, or the one line that refuses it."""
    try:
        return load_config(env, folder, lock_dir=folder)
    except ConfigError as error:
        line = str(error)
        assert len(line.splitlines()) == 1, line
        return line


# --- encodings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-8-sig"])
def test_a_config_with_a_byte_order_mark_loads_as_its_utf8_twin(
    tmp_path: Path, encoding: str
) -> None:
    """PowerShell's `>` writes UTF-16 with a byte-order mark; YAML allows it."""
    (tmp_path / "bom.yaml").write_bytes(renamed("bom").encode(encoding))
    (tmp_path / "plain.yaml").write_text(renamed("plain"))
    loaded = load(tmp_path, "bom")
    assert isinstance(loaded, AppConfig)
    twin = load(tmp_path, "plain")
    assert isinstance(twin, AppConfig)
    assert (loaded.kvcache, loaded.network) == (twin.kvcache, twin.network)


def test_latin1_is_refused_at_the_first_byte_utf8_does_not_take(tmp_path: Path) -> None:
    text = renamed("lat").replace("# Development", "# Développement")
    (tmp_path / "lat.yaml").write_bytes(text.encode("latin-1"))
    line = next(n for n, t in enumerate(text.splitlines(), 1) if "Dév" in t)
    assert load(tmp_path, "lat") == (
        f"config/lat.yaml: file, line {line}, column 4 = b'\\xe9': allowed: UTF-8 text (or "
        "UTF-16/UTF-32 with a byte-order mark); fix: re-save config/lat.yaml as UTF-8, e.g. "
        "iconv -f LATIN1 -t UTF-8 config/lat.yaml > utf8.yaml && mv utf8.yaml config/lat.yaml"
    )


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_utf16_or_32_without_a_byte_order_mark_is_refused_naming_the_encoding(
    tmp_path: Path, encoding: str
) -> None:
    (tmp_path / "nobom.yaml").write_bytes(renamed("nobom").encode(encoding))
    refused = load(tmp_path, "nobom")
    assert isinstance(refused, str)
    assert refused.startswith("config/nobom.yaml: file, line 1"), refused
    assert "iconv -f UTF-16 -t UTF-8" in refused


ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-32", "latin-1", "cp1252"]


@settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(encoding=st.sampled_from(ENCODINGS), words=st.text(max_size=30))
@example(encoding="utf-16", words="")  # read with the locale's codec: UnicodeDecodeError
@example(encoding="latin-1", words="é")  # the same, at the first byte above 127
def test_a_config_in_any_encoding_with_any_words_loads_or_is_refused_in_one_line(
    tmp_path: Path, encoding: str, words: str
) -> None:
    """Words in a comment and in a value, written in each encoding."""
    text = renamed("enc") + f"# {words}\ntags: {{note: {words!r}}}\n"
    (tmp_path / "enc.yaml").write_bytes(text.encode(encoding, errors="replace"))
    load(tmp_path, "enc")


# --- what is not a file -------------------------------------------------------------------------


def test_a_folder_in_the_configs_place_is_named_and_not_to_be_created(tmp_path: Path) -> None:
    (tmp_path / "dir.yaml").mkdir()
    assert load(tmp_path, "dir") == (
        "config/dir.yaml: file = 'a folder': allowed: a YAML file (copy config/dev.yaml and "
        "change what differs); fix: move the folder config/dir.yaml aside and write the "
        "environment's config there"
    )


def test_a_named_pipe_is_refused_without_being_opened(tmp_path: Path) -> None:
    """Opening a pipe nobody writes to would block the synth for good."""
    os.mkfifo(tmp_path / "fifo.yaml")
    refused = load(tmp_path, "fifo")
    assert isinstance(refused, str) and "file = 'a named pipe'" in refused


def test_a_link_to_a_device_is_refused(tmp_path: Path) -> None:
    (tmp_path / "null.yaml").symlink_to(os.devnull)
    refused = load(tmp_path, "null")
    assert isinstance(refused, str) and "file = 'a device'" in refused


def test_a_link_to_nothing_names_where_it_points(tmp_path: Path) -> None:
    (tmp_path / "gone.yaml").symlink_to("moved/gone.yaml")
    assert load(tmp_path, "gone") == (
        "config/gone.yaml: file = 'moved/gone.yaml': allowed: a link to an existing config file; "
        "fix: point config/gone.yaml at the environment's config, or replace the link with the "
        "file"
    )


def test_a_link_to_itself_is_refused(tmp_path: Path) -> None:
    (tmp_path / "loop.yaml").symlink_to("loop.yaml")
    refused = load(tmp_path, "loop")
    assert isinstance(refused, str) and refused.startswith("config/loop.yaml: file = ")


def test_a_link_to_a_config_loads_it(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text(renamed("linked"))
    (tmp_path / "linked.yaml").symlink_to("real.txt")
    assert isinstance(load(tmp_path, "linked"), AppConfig)


# --- permissions --------------------------------------------------------------------------------


@contextlib.contextmanager
def as_another_user() -> Iterator[None]:
    """Root reads any file: as root, act as nobody for the block (and come back)."""
    if os.geteuid() != 0:
        yield
        return
    os.seteuid(NOBODY)
    try:
        yield
    finally:
        os.seteuid(0)


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder another user may enter (pytest's tmp_path is its owner's only)."""
    folder = Path(tempfile.mkdtemp(prefix="hpkv-config-"))
    folder.chmod(0o755)
    yield folder
    for path in folder.iterdir():
        path.chmod(0o644)
        path.unlink()
    folder.rmdir()


UNREADABLE = (
    "file = 'Permission denied': allowed: a file you may read, in folders you may enter; fix: "
    "ls -l config/dev.yaml and its folders; give yourself read access (chmod u+r) or run as "
    "the file's owner"
)


def test_a_file_without_read_permission_is_named_with_the_fix(shared_folder: Path) -> None:
    config = shared_folder / "dev.yaml"
    config.write_text(DEV)
    config.chmod(0)
    with as_another_user():
        refused = load(shared_folder, "dev")
    assert refused == f"config/dev.yaml: {UNREADABLE}"


def test_a_config_in_a_folder_the_user_may_not_enter_is_named_too(shared_folder: Path) -> None:
    (shared_folder / "dev.yaml").write_text(DEV)
    shared_folder.chmod(0o700)
    try:
        with as_another_user():
            refused = load(shared_folder, "dev")
    finally:
        shared_folder.chmod(0o755)
    assert refused == f"config/dev.yaml: {UNREADABLE}"


# --- YAML the parser reads oddly ----------------------------------------------------------------


def test_yaml_nested_past_the_parser_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "deep.yaml").write_text(renamed("deep") + "tags: " + "[" * 600 + "]" * 600)
    refused = load(tmp_path, "deep")
    assert isinstance(refused, str) and "file = 'nested too deep to read'" in refused


def test_an_alias_that_contains_itself_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "cycle.yaml").write_text(renamed("cycle") + "bench:\n  endpoints: &a [*a]\n")
    refused = load(tmp_path, "cycle")
    assert isinstance(refused, str) and refused.startswith("config/cycle.yaml: bench.endpoints"), (
        refused
    )


MERGED = """
kvcache:
  endpoints:
    - &first
      name: first
      model:
        source: s3
        s3_bucket: amzn-s3-demo-replace-with-model-bucket
        s3_prefix: Qwen/Qwen3-8B
      replicas: 1
    - <<: *first
      name: second
      model: {source: s3, s3_bucket: team-weights, s3_prefix: Qwen/Qwen3-8B}
"""


def test_a_merge_key_gives_the_second_endpoint_the_firsts_keys_and_leaves_a_placeholder(
    tmp_path: Path,
) -> None:
    """The second endpoint names a real bucket; the first, copied from dev.yaml, keeps the
    placeholder: loaded (the shipped configs hold it), and named for the synth's warning and
    preflight's refusal."""
    text = renamed("merged").split("\nkvcache:")[0] + MERGED
    text += DEV[DEV.index("\nnetwork:") :]
    (tmp_path / "merged.yaml").write_text(text)
    loaded = load(tmp_path, "merged")
    assert isinstance(loaded, AppConfig), loaded
    first, second = loaded.kvcache.endpoints
    assert (first.replicas, second.replicas) == (1, 1)
    assert second.model.s3_bucket == "team-weights"
    assert placeholder_buckets(loaded) == [("kvcache.endpoints.0.model.s3_bucket", "first")]


def test_a_merge_of_something_not_a_mapping_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "badmerge.yaml").write_text(renamed("badmerge") + "bench:\n  <<: 5\n")
    refused = load(tmp_path, "badmerge")
    assert isinstance(refused, str) and refused.startswith("config/badmerge.yaml: line "), refused
