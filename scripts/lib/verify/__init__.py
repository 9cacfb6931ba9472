"""``verify``: stage-by-stage verification of a live environment, ending in the cross-Pod L2
test (``run.run_verify``); ``waits`` holds what ``verify --wait-minutes`` and
``wait-tiered-storage`` wait for."""

from __future__ import annotations
