"""A clock and a reporter for tests of long waits."""

from __future__ import annotations

import io

from scripts.lib.progress import Clock, Reporter

START = 1_800_000_000.0  # 2027-01-15T08:00:00Z


class FakeClock:
    def __init__(self) -> None:
        self.t = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.t

    def wall(self) -> float:
        return START + self.t

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.t += seconds

    def clock(self) -> Clock:
        return Clock(self.monotonic, self.wall, self.sleep)


def plain(fake: FakeClock, every_s: float = 30.0) -> tuple[Reporter, io.StringIO]:
    stream = io.StringIO()
    return Reporter(stream=stream, clock=fake.clock(), tty=False, every_s=every_s), stream
