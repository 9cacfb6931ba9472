"""What the bench tests share."""

from __future__ import annotations

COLD_S, WARM_S = 0.060, 0.015


def server_interval_ms(timing: dict[str, float], end: str) -> float:
    return (timing[end] - timing["received"]) * 1000
