"""What a log or progress line says, not how: each line is checked for its facts (the names, ids,
values and states it must carry), so rewording a line breaks no test while dropping a fact does.
Where the wording is the interface (a one-line error a user reads or a script matches), tests
compare the whole text instead."""

from __future__ import annotations

from collections.abc import Sequence


def missing_facts(line: str, facts: Sequence[object]) -> list[object]:
    return [fact for fact in facts if str(fact) not in line]


def assert_lines_say(lines: str | Sequence[str], *expected: Sequence[object]) -> None:
    """One line for each entry of ``expected``, in order, each carrying every fact of its entry."""
    got = lines.splitlines() if isinstance(lines, str) else list(lines)
    assert len(got) == len(expected), f"{len(got)} lines, {len(expected)} expected: {got}"
    for line, facts in zip(got, expected, strict=True):
        missing = missing_facts(line, facts)
        assert not missing, f"{line!r} does not say {missing}"


def line_saying(lines: str | Sequence[str], *facts: object) -> str:
    """The one line that carries every fact (fails, showing the lines, when none or several do)."""
    got = lines.splitlines() if isinstance(lines, str) else list(lines)
    found = [line for line in got if not missing_facts(line, facts)]
    assert len(found) == 1, f"{len(found)} lines say {list(facts)}: {got}"
    return found[0]
