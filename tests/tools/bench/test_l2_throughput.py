"""`make bench`'s L2 comparison alternates which side goes first and times each side's writes in
the rounds it wrote first: it refuses a round count that would favour one side."""

from __future__ import annotations

import pytest

from tools.bench.l2_throughput import main


@pytest.mark.parametrize("rounds", ["3", "0"])
def test_a_round_count_that_favours_one_side_is_refused(
    rounds: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["--rounds", rounds])
    assert stopped.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"--rounds {rounds}" in err and "even" in err
