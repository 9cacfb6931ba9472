"""The exception the handler raises on purpose: its message is what CloudFormation shows."""

from __future__ import annotations


class HandlerError(Exception):
    """A failure the user must act on; ``str(error)`` says what happened and what to check."""
