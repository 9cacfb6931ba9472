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
from infra.metrics.alerts import alert_rules_yaml
from infra.metrics.dashboards import Panel, Target, grafana_dashboard, rows, upstream_dashboards
from scripts.lib import runtime
from scripts.lib.errors import CliError, Exit, shown
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


SAMPLES_SHAPE = (
    'a sample series JSON file: {"range": {"<panel title>/<legend>": [{"labels": {...}, '
    '"values": [[t, v], ...]}]}}, like tests/scripts/fixtures/observability_samples.json'
)


def _refuse_samples(samples: Path, why: str, fix: str) -> CliError:
    return CliError(
        f"--samples = {shown(str(samples))}: allowed: {SAMPLES_SHAPE}; {why}; fix: {fix}",
        Exit.USAGE,
    )


def _series_problem(found: Any) -> str | None:
    """Why ``found`` (the "range" of a samples file) is not series the panels can draw."""
    if not isinstance(found, dict):
        return '"range" is not an object'
    for key, series in found.items():
        if not isinstance(series, list):
            return f'"range"["{key}"] is not a list'
        for one in series:
            if not isinstance(one, dict) or not isinstance(one.get("labels", {}), dict):
                return f'"range"["{key}"] holds a series without a "labels" object'
            values: Any = one.get("values")  # a TypeError below when not a list of pairs
            try:
                [(float(t), float(v)) for t, v in values]
            except (TypeError, ValueError):
                return f'"range"["{key}"] holds "values" that are not [time, number] pairs'
    return None


def _read_samples(samples: Path | None, png: Path | None) -> Any:
    """The sample series --png renders, read and checked before anything is written: a missing,
    unreadable or other kind of file is the caller's mistake (exit 2), not a failed operation."""
    if png is None:
        if samples is not None:  # read for nothing: no picture would be drawn from it
            raise CliError(
                f"--samples = {shown(str(samples))}: allowed: with --png FILE (where "
                "the panels are drawn); fix: add --png, or leave --samples out",
                Exit.USAGE,
            )
        return None
    if samples is None:
        raise CliError(
            f"--png = {shown(str(png))}: allowed: with --samples FILE (the series to "
            "draw); fix: add --samples, or leave --png out",
            Exit.USAGE,
        )
    if not samples.is_file():  # a folder, a FIFO (reading it would wait for a writer), a device
        what = (
            "a folder"
            if samples.is_dir()
            else "not found"
            if not samples.exists()
            else ("not a regular file")
        )
        raise _refuse_samples(samples, f"this is {what}", "give the path of a samples file")
    try:
        data = json.loads(samples.read_bytes().decode("utf-8"))
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise _refuse_samples(
            samples, f"it cannot be read ({why})", "make it readable, or give another file"
        ) from None
    except ValueError as exc:  # not UTF-8, not JSON
        raise _refuse_samples(
            samples, f"it is not JSON ({' '.join(str(exc).split())})", "give a samples file"
        ) from None
    if isinstance(data, dict) and "panels" in data and "range" not in data:
        raise _refuse_samples(
            samples,
            "this is a Grafana dashboard (what `hpkv dashboard` writes), not series",
            "give the samples file, not the dashboard",
        )
    problem = _series_problem(data.get("range")) if isinstance(data, dict) else "not an object"
    if problem is not None:
        raise _refuse_samples(samples, problem, "give a samples file of that shape")
    return data


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
        render_png(rows(config), sample_series(series), png, f"{config.stack_prefix} (sample data)")
        picture.record()
        print(f"wrote {png}")
    return Exit.OK
