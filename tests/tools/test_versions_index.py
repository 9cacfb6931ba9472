"""`make versions` (``python -m tools.versions``) asks the index pip is configured with: an index
URL without a scheme (``PIP_INDEX_URL=pypi.org/simple``, ``--pypi-index localhost:8080/simple``)
is refused in one line, exit 2, instead of a ValueError traceback at the first request; one with
a scheme is asked. Every usage error of the tool is one line (argparse's own starts with the
usage).

No double: ``tools.versions.__main__.main`` in this process, the index a closed local port."""

from __future__ import annotations

import pytest

from tests.support.http_documents import closed_port
from tools.versions.__main__ import main


@pytest.mark.parametrize("index", ["pypi.org/simple", "localhost:8080/simple", "https://"])
def test_a_configured_index_without_scheme_or_host_is_one_line(
    index: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", index)
    assert main(["--only", "pypi"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(
        f"error: the pip index (PIP_INDEX_URL, else index-url of `pip config "
        f"list`) = {index!r}: allowed: an http(s) URL with a host"
    ), line


def test_an_index_option_without_scheme_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--only", "pypi", "--pypi-index", "localhost:8080/simple"])
    assert done.value.code == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: argument --pypi-index: 'localhost:8080/simple': allowed: an http(s) URL with a "
        "host, like https://pypi.org/simple; fix: write https://localhost:8080/simple"
    ]


def test_an_index_with_a_scheme_is_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PIP_INDEX_URL", f"http://127.0.0.1:{closed_port()}/simple")
    assert main(["--only", "pypi", "--json", "--timeout", "2"]) == 0
    assert "unreachable" in capsys.readouterr().out
