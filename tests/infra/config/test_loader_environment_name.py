"""A path given where an environment's name belongs (``--env config/dev.yaml``, ``-c
env=./config/dev.yaml``, ``make ENV=config``) is named for what it is, with the name to pass
instead: an environment is the name of a file in config/, beside its lock, so a path is never
read in its place (the line used to tell the user to rename config/config/dev.yaml.yaml, or to
create config/config.yaml for the folder the configs are in). A name still loads, also where a
folder of that name is in the working directory.

No double: ``load_config`` over a temporary config folder, from a temporary working folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.config import ConfigError, load_config
from infra.config.loader import CONFIG_DIR

HOW = "(app.py and cdk: -c env={0}; make: ENV={0})"


@pytest.fixture
def configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config"
    folder.mkdir()
    (folder / "dev.yaml").write_text((CONFIG_DIR / "dev.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    return folder


def _line(env: str, configs: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(env, configs, configs.parent / "locks")
    (line,) = str(caught.value).splitlines()
    return line


@pytest.mark.parametrize(
    "given",
    [
        "config/dev.yaml",
        "./config/dev.yaml",
        "config/dev.yml",
        "dev.yaml",
        "/elsewhere/config/dev.yaml",
        "config\\dev.yaml",
    ],
)
def test_a_path_to_a_config_file_says_which_name_to_pass(given: str, configs: Path) -> None:
    assert _line(given, configs) == (
        f"config: env = {given!r}: allowed: an environment's name, not a path: the name of a "
        f"file in config/ without .yaml (dev); fix: pass --env dev {HOW.format('dev')}"
    )


@pytest.mark.parametrize("given", ["config", "./config/", "."])
def test_a_folder_is_named_a_folder_not_an_environment_to_create(given: str, configs: Path) -> None:
    line = _line(given, configs)
    assert line.startswith(
        f"config: env = {given!r}: allowed: an environment's name (dev); "
        "this is a folder; fix: name an environment"
    ), line
    assert line.endswith("e.g. --env dev") and "create" not in line


def test_a_config_outside_the_config_folder_is_copied_in_under_a_name_that_fits(
    configs: Path,
) -> None:
    line = _line("/home/me/my_env.yaml", configs)
    assert (
        "fix: copy /home/me/my_env.yaml to config/my-env.yaml (and its environment: key), "
        "then pass --env my-env" in line
    ), line


def test_a_name_loads_even_beside_a_folder_of_that_name(configs: Path) -> None:
    (configs.parent / "dev").mkdir()
    assert load_config("dev", configs, configs.parent / "locks").environment == "dev"


def test_a_name_without_a_file_is_still_offered_to_create(configs: Path) -> None:
    assert _line("staging", configs).endswith("or create config/staging.yaml")
