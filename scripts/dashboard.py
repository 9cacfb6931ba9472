"""``python -m scripts.dashboard --env dev``: write the environment's Grafana dashboard to
``dist/<env>/grafana-dashboard.json`` (import it by hand, with the AMP workspace as a SigV4
Prometheus data source), and the alert rules it ships to AMP next to it.

``--samples FILE --png PATH`` also renders the dashboard's panels from sample series (the
screenshot in docs/ comes from ``tests/scripts/fixtures/observability_samples.json``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from infra.config import ConfigError, load_config
from infra.dashboards import Panel, Target, alert_rules_yaml, grafana_dashboard, rows
from infra.unresolved import UnresolvedTokenError, write_checked
from scripts.report import render_png


def sample_series(samples: dict[str, Any]) -> Any:
    """fetch(panel, target) over a samples file: ``range["<panel title>/<legend>"]`` is a list
    of ``{"labels": {...}, "values": [[t, v], ...]}``."""

    def fetch(
        panel: Panel, target: Target
    ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
        found = samples["range"].get(f"{panel.title}/{target.legend}", [])
        return [(s["labels"], [(float(t), float(v)) for t, v in s["values"]]) for s in found]

    return fetch


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.dashboard", description=__doc__)
    parser.add_argument("--env", default="dev")
    parser.add_argument("--out", default=None, help="directory (default dist/<env>)")
    parser.add_argument("--samples", default=None, help="sample series JSON for --png")
    parser.add_argument("--png", default=None, help="render the panels from --samples here")
    args = parser.parse_args(argv)
    try:
        config = load_config(args.env)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else Path("dist") / config.environment
    dashboard, rules = out / "grafana-dashboard.json", out / "alert-rules.yaml"
    try:
        write_checked({
            dashboard: json.dumps(grafana_dashboard(config), indent=2) + "\n",
            rules: alert_rules_yaml(config),
        })  # fmt: skip
    except UnresolvedTokenError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {dashboard} and {rules}")
    if args.png:
        if not args.samples:
            print("error: --png needs --samples", file=sys.stderr)
            return 2
        samples = json.loads(Path(args.samples).read_text())
        render_png(rows(config), sample_series(samples), Path(args.png),
                   f"{config.stack_prefix} (sample data)")  # fmt: skip
        print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
