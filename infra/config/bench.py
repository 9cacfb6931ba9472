"""What ``hpkv bench compare`` runs against the endpoints and the thresholds its verdicts use
(``bench`` in config).

A section of its own: the thresholds judge a benchmark run the operator (or the nightly
pipeline) starts, against figures the source post publishes; they are not a property of the
deployed cache (``kvcache``) nor an alert on live traffic (``observability``, whose rules
Prometheus evaluates all the time). Prompt lengths are in words of the benchmark's prompts,
about one token each with the BPE tokenizers they are built for (``scripts/lib/prompts.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import Field, field_validator

from infra.config.base import Section
from infra.config.errors import RuleViolation

# The prompts' words are ones BPE tokenizers encode as about one token each; a request is judged
# at this many tokens per word, which leaves room for the chat's role labels and for a tokenizer
# that splits a word.
TOKENS_PER_WORD = 1.1


def words_as_tokens(words: int) -> int:
    return math.ceil(words * TOKENS_PER_WORD)


class ChatWorkload(Section):
    """Multi-round chat with many users: one system prompt shared by all, a context of each
    user's own, and every round the whole conversation so far plus a new question."""

    users: int = Field(default=10, ge=1, le=1000)
    """Users, each with a conversation of its own."""
    rounds: int = Field(default=5, ge=1, le=100)
    """Rounds per user; round r sends everything of rounds 1..r-1 again."""
    concurrency: int = Field(default=4, ge=1, le=256)
    """Requests in flight at once, at most (a user's next round waits for its answer)."""
    system_prompt_words: int = Field(default=1000, ge=0, le=100_000)
    """Words of the system prompt every user shares."""
    user_context_words: int = Field(default=2000, ge=0, le=100_000)
    """Words of each user's own context, sent with every round."""
    question_words: int = Field(default=50, ge=1, le=10_000)
    """Words of each round's new question."""
    answer_tokens: int = Field(default=100, ge=1, le=4096)
    """Tokens generated per answer (max_tokens)."""

    def longest_request_tokens(self) -> int:
        """The last round's request: the system prompt, the user's context, every question so
        far and every earlier answer, plus the answer it generates."""
        words = (
            self.system_prompt_words + self.user_context_words + self.rounds * self.question_words
        )
        return words_as_tokens(words) + self.rounds * self.answer_tokens


class BenchConfig(Section):
    endpoints: tuple[str, ...] = ()
    """Names of the ``kvcache.endpoints`` to compare, one per tier; empty: all of them. Listed,
    or with a workload sized here (``sweep_prompt_words``, ``cross_pod_prompt_words``,
    ``max_tokens``, ``chat``), each compared endpoint's ``--max-model-len`` must hold the
    longest request, prompt words counted at 1.1 tokens each."""
    sweep_prompt_words: tuple[int, ...] = (500, 1000, 1500, 2000, 2500, 3000)
    """Prompt lengths of the cold/warm sweep (the verdict's length is added when missing)."""
    sweep_repeats: int = Field(default=3, ge=1, le=100)
    """Cold/warm pairs per prompt length."""
    chat: ChatWorkload = ChatWorkload()
    cross_pod_prompt_words: int = Field(default=2500, ge=256, le=100_000)
    """Length of the prompt written on one replica and read on another."""
    max_tokens: int = Field(default=8, ge=1, le=4096)
    """Tokens generated per request of the sweep and the cross-Pod test."""
    min_cross_pod_hit: float = Field(default=0.99, gt=0, le=1)
    """Verdict: share of the prompt's whole 256-token chunks the second replica reads from L2
    (the source post: 100 % on a repeated prompt)."""
    min_warm_speedup: float = Field(default=2.0, ge=1, le=100)
    """Verdict: cold TTFT p50 over warm TTFT p50 at ``speedup_prompt_words`` (the source post:
    2.7x at about 2,500 tokens)."""
    speedup_prompt_words: int = Field(default=2500, ge=1, le=100_000)
    """The sweep length the speedup verdict reads."""
    min_scale_out_l2_share: float = Field(default=0.9, gt=0, le=1)
    """Verdict: share of the known prefix's whole 256-token chunks a replica that joined after
    the prefix was written reads from L2 on its first request (the scale-out workload, at
    ``cross_pod_prompt_words``). Below ``min_cross_pod_hit``: the new Pod takes minutes to
    start, in which the L2's evictor may drop the least recently used chunks of a busy tier;
    a replica that misses L2 altogether reads 0."""

    @field_validator("sweep_prompt_words")
    @classmethod
    def _lengths(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        if not v or any(n < 1 or n > 100_000 for n in v):
            raise RuleViolation("one or more lengths of 1 to 100000 words", "fix the list")
        return v


def longest_requests(
    lengths: Iterable[int], cross_pod_words: int, max_tokens: int, chat: ChatWorkload
) -> dict[str, int]:
    """Each workload's longest request in tokens (prompt and generation): what an endpoint's
    ``--max-model-len`` must hold."""
    return {
        "sweep": words_as_tokens(max(lengths)) + max_tokens,
        "cross_pod": words_as_tokens(cross_pod_words) + max_tokens,
        "chat": chat.longest_request_tokens(),
    }
