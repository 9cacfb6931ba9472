"""A handler bundle ships the distributions requirements.txt pins: one installed at another
version fails the synth with one line that names it, both versions and the fix."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from infra.custom_resources import provider
from infra.custom_resources.provider import HandlerBundle

HANDLER_DIR = Path(provider.__file__).parent / "node_gate" / "handler"
INSTALLED = importlib.metadata.version("six")


def _bundle() -> HandlerBundle:
    # A skip of its own: a bundle the synths of this process never wrote.
    return HandlerBundle(HANDLER_DIR, "gate", ("six",), lambda _relative: False)


def test_a_distribution_at_its_pin_is_shipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provider, "pinned_versions", lambda: {"six": INSTALLED})
    _bundle().write(tmp_path)
    installed = Path(str(importlib.metadata.distribution("six").locate_file("six.py")))
    assert (tmp_path / "six.py").read_bytes() == installed.read_bytes()
    assert (tmp_path / f"six-{INSTALLED}.dist-info" / "METADATA").is_file()


def test_a_distribution_off_its_pin_fails_the_synth_naming_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(provider, "pinned_versions", lambda: {"six": "0.0.1"})
    with pytest.raises(RuntimeError) as refused:
        _bundle().write(tmp_path)
    line = str(refused.value)
    assert "\n" not in line
    assert f"six {INSTALLED} is installed" in line and "pins 0.0.1" in line
    assert "pip install -r requirements.txt" in line
    assert not (tmp_path / "six.py").exists()
