"""The fake model server the rest of the suite uses (tests/doubles/fake_vllm.py, fake_tiers.py),
held to a real replica (tests/server/conftest.py): the chunks it streams, and the counters it
exposes over the union of the names the fake has and the names the judges read (names, types,
labels), so that neither can drift without this failing; and vLLM's own prefix cache, which the
fake models as L0."""

from __future__ import annotations

import json
import re
import urllib.request
from typing import Any

import pytest

from infra.metrics.tiers import L0_HITS, QUERIED, tier_shares
from scripts.lib.bench_compare.scrape import SCRAPED, increase, scrape_metrics
from scripts.lib.openai_stream import list_models, stream_completion
from scripts.lib.prompts import make_prompt
from tests.doubles.fake_tiers import COUNTERS as FAKE_COUNTERS
from tests.doubles.fake_tiers import Tiers, TierSpec
from tests.doubles.fake_vllm import FakeVllm
from tests.support.vllm_server import complete, metrics_page, settled

SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\} (\S+)$", re.M)


def _families(text: str) -> dict[str, tuple[str | None, frozenset[str]]]:
    """Each sample name: the TYPE of its family and its label names."""
    types = dict(re.findall(r"^# TYPE (\S+) (\w+)$", text, re.M))
    return {
        name: (
            types.get(name, types.get(name.removesuffix("_total"))),
            frozenset(re.findall(r'(\w+)="', body)),
        )
        for name, body, _ in SAMPLE.findall(text)
    }


def _raw_stream(url: str, model: str, prompt: str) -> list[Any]:
    body = json.dumps(
        {
            "model": model,
            "prompt": prompt,
            "max_tokens": 3,
            "temperature": 0,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
    ).encode()
    request = urllib.request.Request(
        f"{url}/v1/completions", data=body, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=120) as resp:
        events = [
            line[6:] for line in resp.read().decode().splitlines() if line.startswith("data: ")
        ]
    return [e if e == "[DONE]" else json.loads(e) for e in events]


def test_the_fake_streams_as_vllm_does(fleet: Any) -> None:
    """The chunks the CLI's client reads: text chunks of object text_completion, then one chunk
    with usage and no choices, then [DONE]."""
    real_url = fleet["a"].url
    real = _raw_stream(real_url, list_models(real_url)[0], make_prompt(1, 50))
    with FakeVllm() as fake:
        mocked = _raw_stream(fake.url, "m", make_prompt(1, 50))
    for events in (real, mocked):
        *chunks, usage, done = events
        assert done == "[DONE]"
        assert usage["choices"] == [] and set(usage["usage"]) >= {
            "prompt_tokens",
            "completion_tokens",
            "total_tokens",
        }
        assert all(
            c["object"] == "text_completion" and c["choices"][0]["text"] is not None for c in chunks
        )
    assert real[-2]["usage"]["completion_tokens"] == 3


def test_the_fake_exposes_the_counters_a_replica_does(fleet: Any) -> None:
    """Over the union of the fake's counters and the ones the judges read: each on both pages,
    a counter on both, with the same label names (vLLM's and the image's LMCache's)."""
    b = fleet["b"]
    before = scrape_metrics(b.url)
    complete(b.url, list_models(b.url)[0], make_prompt(2, 600))
    settled(b.url, before)
    real = _families(metrics_page(b.url))
    fake = _families(Tiers(TierSpec(tier="curvine")).metrics_text("/opt/ml/model"))
    names = set(FAKE_COUNTERS) | set(SCRAPED)
    assert {n for n in names if n not in real} == set(), "the replica lacks these"
    assert {n for n in names if n not in fake} == set(), "the fake lacks these"
    differ = {n: (real[n], fake[n]) for n in names if real[n] != fake[n]}
    assert differ == {}
    assert {real[n][0] for n in names} == {"counter"}


def test_a_repeated_prompt_is_served_from_vllms_own_prefix_cache(fleet: Any) -> None:
    url = fleet["b"].url
    model = list_models(url)[0]
    prompt = make_prompt(7, 600)
    before = scrape_metrics(url)
    first = stream_completion(url, model, prompt, max_tokens=2)
    second = stream_completion(url, model, prompt, max_tokens=2)
    deltas = increase(before, scrape_metrics(url))
    assert first.prompt_tokens == second.prompt_tokens
    assert deltas[QUERIED] == 2 * first.prompt_tokens
    assert 0 < deltas[L0_HITS] < first.prompt_tokens  # whole blocks of the second request
    bpt = fleet.config.observability.kv_bytes_per_token
    share = tier_shares(deltas, "none", bpt).l0
    assert share == pytest.approx(deltas[L0_HITS] / deltas[QUERIED])
