"""``hpkv dashboard --env dev``: write the environment's Grafana dashboard to
``dist/<env>/grafana-dashboard.json`` (import it by hand, with the AMP workspace as a SigV4
Prometheus data source), and the alert rules it ships to AMP next to it. With Curvine, also
Curvine's own FUSE dashboard (``curvine-fuse-dashboard.json``), to import the same way.

``--samples FILE --png PATH`` also renders the dashboard's panels from sample series (the
screenshot in docs/ comes from ``tests/scripts/fixtures/observability_samples.json``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.cdk.unresolved import UnresolvedTokenError, check_all
from infra.cdk.written import OutputFile, OutputFolder
from infra.metrics.dashboards import (
    Panel,
    Target,
    alert_rules_yaml,
    grafana_dashboard,
    rows,
    upstream_dashboards,
)
from scripts.lib import runtime
from scripts.lib.errors import Exit
from scripts.lib.report import render_png


def sample_series(samples: dict[str, Any]) -> Any:
    """fetch(panel, target) over a samples file: ``range["<panel title>/<legend>"]`` is a list
    of ``{"labels": {...}, "values": [[t, v], ...]}``."""

    def fetch(
        panel: Panel, target: Target
    ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        found = samples["range"].get(f"{panel.title}/{target.legend}", [])
        return [(s["labels"], [(float(t), float(v)) for t, v in s["values"]]) for s in found]

    return fetch


@dataclass(frozen=True)
class DashboardOptions:
    env: str = "dev"
    out: Path | None = None
    """Default: dist/<env>."""
    samples: Path | None = None
    png: Path | None = None


def _read_samples(samples: Path | None, png: Path | None) -> Any:
    """The sample series --png renders, read before anything is written: a missing or broken
    input file is the caller's mistake (exit 2), not a failed operation."""
    if png is None:
        return None
    if samples is None:
        raise runtime.fail("--png needs --samples", Exit.USAGE)
    try:
        return json.loads(samples.read_text())
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise runtime.fail(f"--samples {samples}: {why}; give a sample series JSON file",
                           Exit.USAGE) from None  # fmt: skip
    except ValueError as exc:
        raise runtime.fail(f"--samples {samples}: not JSON ({exc})", Exit.USAGE) from None


def run(o: DashboardOptions) -> Exit:
    samples, png = o.samples, o.png
    series = _read_samples(samples, png)
    config = runtime.config(o.env)
    folder = OutputFolder(o.out or Path("dist") / config.environment, "--out")
    picture = OutputFile(png, "--png") if png else None
    folder.check()  # both before anything is written
    if picture is not None:
        picture.check()
    dashboard, rules = "grafana-dashboard.json", "alert-rules.yaml"
    files = {
        dashboard: json.dumps(grafana_dashboard(config), indent=2) + "\n",
        rules: alert_rules_yaml(config),
        **upstream_dashboards(config),
    }
    try:
        check_all({folder.path / name: text for name, text in files.items()})
    except UnresolvedTokenError as error:
        raise runtime.fail(str(error), Exit.USAGE) from None
    written = folder.write(files)
    print(f"wrote {written[0]} and {written[1]}")
    for path in written[2:]:
        print(f"wrote {path} (upstream, import it next to the dashboard)")
    if png and picture is not None:
        render_png(rows(config), sample_series(series), png,
                   f"{config.stack_prefix} (sample data)")  # fmt: skip
        picture.record()
        print(f"wrote {png}")
    return Exit.OK
