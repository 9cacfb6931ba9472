"""Which tier pays off for a prompt, and which L2 to deploy.

One formula gives every verdict: reading a prompt's KV back from a tier beats recomputing it when
    latency + prompt_tokens x kv_bytes_per_token / bandwidth  <  prompt_tokens / prefill rate,
and the recommendation is always a tier whose verdict is yes (or none when no L2 has one).
Tier figures, each the conservative end of its source's range:

| tier                  | latency | bandwidth per reader                  | source              |
|-----------------------|---------|---------------------------------------|---------------------|
| L1 host DRAM (T2)     | 10 us   | 200 GB/s                              | storage post, T2    |
| Curvine NVMe pool     | in bw   | 1.97 GB/s (0.1028 GiB in ~56 ms)      | Curvine post, bench |
| FSx for Lustre (T3)   | 500 us  | min(12.5 GB/s ENA client, file system | storage post, T3;   |
|                       |         | capacity TiB x MB/s/TiB)              | FSx Lustre guide    |
| Tiered Storage        | 1 ms    | 10 GB/s                               | ASSUMED: no figure  |
|                       |         |                                       | is published        |

Tiered Storage's figures are an assumption, not a measurement: the ai-toolkit daemon serves
node-local shared memory (a host memory copy) behind an HTTP control plane on the node (a lease
per read), so a read costs a few local round trips and a memory copy. `hpkv bench` on an endpoint
with ``l2_backend: tieredstorage`` measures it.

Storage post: "Accelerate inference with KV cache tiering on AWS" (AWS Storage Blog): T2
200-500 GB/s at single-digit microseconds, T3 100-500 us and up to 100 Gbps per client over
ENA, T4 milliseconds to seconds; above ~50K tokens a T3 read almost always beats recomputing,
below ~10K recomputing is cheap. Curvine post: "tiered KV cache on HyperPod with Curvine"
(AWS ML Blog): a ~1,900-token Qwen2-7B prompt (0.1028 GiB) read cross-node in about 56 ms;
node NVMe ~3 GB/s. FSx aggregate throughput = storage TiB x PerUnitStorageThroughput.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from scripts.lib.sizing import GIB, estimate_params, kv_bytes_per_token

TIER_FIGURES: dict[str, tuple[float, float]] = {  # name -> (latency s, bytes/s; 0: computed)
    "l1": (10e-6, 200e9),
    "curvine": (0.0, 0.1028 * GIB / 0.056),
    "fsx_lustre": (500e-6, 0.0),
    "tieredstorage": (1e-3, 10e9),  # assumed (module docstring)
}
L2_TIERS = ("curvine", "fsx_lustre", "tieredstorage")
FSX_CLIENT_BYTES_PER_S = 12.5e9  # 100 Gbps ENA per client (storage post)
# Without a measured prefill rate: 2 x params FLOPs per token at this effective rate per GPU.
# An assumption (about 30-40% of an L40S/H100 dense bf16 peak), not a measurement: pass the
# rate `hpkv bench` measured instead.
ASSUMED_PREFILL_FLOPS_PER_GPU = 100e12
RECOMPUTE_CHEAP_TOKENS, READ_BACK_WINS_TOKENS = 10_000, 50_000  # storage post's decision lines


@dataclass
class TierRead:
    tier: str
    seconds: float
    beats_recompute: bool


@dataclass
class TierAdvice:
    prompt_tokens: int
    prompt_bytes: int
    prefill_tokens_per_s: float
    prefill_source: str
    recompute_seconds: float
    reads: list[TierRead]
    sessions: int
    context_tokens: int
    working_set_bytes: int
    curvine_pool_bytes: int
    fsx_bytes_per_s: float
    tieredstorage_bytes: int
    recommendation: str  # curvine | fsx_lustre | tieredstorage | none
    reason: str
    fsx_capacity_gib_needed: int

    @property
    def flag(self) -> str | None:
        """``l2_does_not_pay_off`` exactly when the recommendation is none: the flag and the
        recommendation come from the same verdicts, so they never disagree."""
        if self.recommendation != "none":
            return None
        return (
            f"l2_does_not_pay_off: no L2 this environment can deploy reads {self.prompt_tokens:,} "
            f"tokens back faster than recomputing them ({self.recompute_seconds:.3f} s)"
        )

    @property
    def working_set_tb(self) -> float:
        return self.working_set_bytes / 1e12

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["working_set_tb"] = round(self.working_set_tb, 3)
        return data


def fsx_capacity_for(nbytes: int) -> int:
    """Smallest valid PERSISTENT_2 capacity (1200 GiB, then steps of 2400) holding nbytes."""
    gib = -(-nbytes // GIB)
    if gib <= 1200:
        return 1200
    return -(-gib // 2400) * 2400


def tier_advice(
    cfg: dict[str, Any],
    *,
    prompt_tokens: int,
    sessions: int,
    context_tokens: int,
    curvine_pool_bytes: int,
    fsx_capacity_gib: int,
    fsx_throughput_mb_per_tib: int,
    gpus: int,
    tieredstorage_bytes: int = 0,
    prefill_tokens_per_s: float | None = None,
    params: int | None = None,
    kv_dtype: str | None = None,
    curvine_read_bytes_per_s: float | None = None,
) -> TierAdvice:
    """Whether reading a prompt's KV back from each tier beats recomputing it, the working set
    of ``sessions`` contexts, and which shared tier (if any) to deploy, with the reason.
    ``tieredstorage_bytes``: one node's Tiered Storage reservation (pooling across nodes is not
    counted: unverified); 0 (Tiered Storage off) rules the tier out.
    ``curvine_read_bytes_per_s``: a measured read rate of the Curvine L2 (``make bench`` measures
    LMCache's fs connector on a folder; on a node, its mount) instead of the post's figure."""
    per_token = kv_bytes_per_token(cfg, kv_dtype)
    if prefill_tokens_per_s is None:
        n_params = params if params is not None else estimate_params(cfg)
        rate = gpus * ASSUMED_PREFILL_FLOPS_PER_GPU / (2 * n_params)
        source = f"estimate: {gpus} GPU x 100 TFLOP/s / (2 x params); pass a measured rate"
    else:
        rate, source = prefill_tokens_per_s, "measured (--prefill-tokens-per-s)"
    recompute = prompt_tokens / rate
    nbytes = prompt_tokens * per_token
    working = per_token * context_tokens * sessions
    needed = fsx_capacity_for(working)
    # FSx is judged at the size that holds the working set: its throughput grows with capacity.
    fsx_gib = max(fsx_capacity_gib, needed)
    fsx_bw = min(FSX_CLIENT_BYTES_PER_S, fsx_gib / 1024 * fsx_throughput_mb_per_tib * 1e6)
    figures = dict(TIER_FIGURES)
    if curvine_read_bytes_per_s is not None:
        figures["curvine"] = (0.0, curvine_read_bytes_per_s)
    reads = []
    for tier, (latency, bw) in figures.items():
        seconds = latency + nbytes / (bw or fsx_bw)
        reads.append(TierRead(tier, seconds, seconds < recompute))
    wins = {r.tier for r in reads if r.beats_recompute}
    if "curvine" in wins and working <= curvine_pool_bytes:
        rec = "curvine"
        reason = (
            f"a Curvine read ({_read(reads, 'curvine'):.3f} s) beats recomputing "
            f"({recompute:.3f} s) and the working set ({working / 1e12:.3f} TB) fits the NVMe "
            f"pool ({curvine_pool_bytes / 1e12:.3f} TB)"
        )
    elif "fsx_lustre" in wins:
        why = (
            f"the working set ({working / 1e12:.3f} TB) exceeds the NVMe pool "
            f"({curvine_pool_bytes / 1e12:.3f} TB)"
            if working > curvine_pool_bytes
            else "a Curvine read does not beat recomputing"
        )
        rec = "fsx_lustre"
        reason = (
            f"an FSx read ({_read(reads, 'fsx_lustre'):.3f} s) beats recomputing "
            f"({recompute:.3f} s) and {why}; size it at >= {needed} GiB"
        )
    elif "curvine" in wins:
        rec = "curvine"
        reason = (
            f"a Curvine read ({_read(reads, 'curvine'):.3f} s) beats recomputing "
            f"({recompute:.3f} s) and an FSx read ({_read(reads, 'fsx_lustre'):.3f} s at "
            f"{fsx_gib} GiB x {fsx_throughput_mb_per_tib} MB/s/TiB) does not; the NVMe pool holds "
            f"{curvine_pool_bytes / working:.0%} of the working set (the evictor keeps the newest)"
        )
    elif "tieredstorage" in wins and tieredstorage_bytes > 0:
        rec = "tieredstorage"
        held = (
            "fits one node's reservation"
            if working <= tieredstorage_bytes
            else f"is {working / max(tieredstorage_bytes, 1):.1f}x one node's reservation"
        )
        reason = (
            f"a Tiered Storage read ({_read(reads, 'tieredstorage'):.3f} s, assumed figures: "
            f"measure it with hpkv bench) beats recomputing ({recompute:.3f} s) and Curvine and "
            f"FSx reads do not; the working set ({working / 1e12:.3f} TB) {held} "
            f"({tieredstorage_bytes / 1e12:.3f} TB)"
        )
    else:
        rec = "none"
        reason = (
            f"recomputing {prompt_tokens:,} tokens ({recompute:.3f} s) is as fast as reading "
            f"them back from a shared tier (Curvine {_read(reads, 'curvine'):.3f} s, FSx "
            f"{_read(reads, 'fsx_lustre'):.3f} s at {fsx_bw / 1e9:.2f} GB/s, Tiered Storage "
            f"{_read(reads, 'tieredstorage'):.3f} s"
            + (" but no reservation)" if "tieredstorage" in wins else ")")
        )
        if prompt_tokens < RECOMPUTE_CHEAP_TOKENS:
            reason += f"; the storage post: under ~{RECOMPUTE_CHEAP_TOKENS:,} tokens tiering "
            reason += "rarely pays off"
    return TierAdvice(
        prompt_tokens=prompt_tokens,
        prompt_bytes=nbytes,
        prefill_tokens_per_s=rate,
        prefill_source=source,
        recompute_seconds=recompute,
        reads=reads,
        sessions=sessions,
        context_tokens=context_tokens,
        working_set_bytes=working,
        curvine_pool_bytes=curvine_pool_bytes,
        fsx_bytes_per_s=fsx_bw,
        tieredstorage_bytes=tieredstorage_bytes,
        recommendation=rec,
        reason=reason,
        fsx_capacity_gib_needed=needed,
    )


def _read(reads: list[TierRead], tier: str) -> float:
    return next(r.seconds for r in reads if r.tier == tier)
