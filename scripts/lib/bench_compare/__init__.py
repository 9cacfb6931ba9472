"""``hpkv bench compare``: the same workloads against one endpoint per KV-cache tier, and a
report folder: ``targets`` (what is measured), ``scrape`` (the counters on /metrics),
``workloads`` (sweep, multi-round chat, cross-Pod), ``stats`` and ``verdicts`` (the figures and
the thresholds), ``run`` (in order, with progress), ``report`` and ``plots`` (the files)."""
