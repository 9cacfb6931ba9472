"""Prometheus's own tool (``promtool``): ``check rules`` parses every expression and template as
Prometheus (and AMP) would, ``test rules`` evaluates alerts over sample series, ``check config``
loads a scrape configuration as Prometheus does.

Debian's promtool (2.42, the package ``.ci/run`` installs) is built without Kubernetes service
discovery: it refuses ``kubernetes_sd_configs`` as an unknown field. ``config_verdict`` therefore
checks a copy in which each job's ``kubernetes_sd_configs`` is a ``static_configs`` target; the
rest of the job (relabelling with RE2's regexps, label names, paths, durations, job names) is
checked as Prometheus checks it, the discovery settings themselves are not.

Tests that need it skip with the reason where it is absent; ``.ci/run`` installs it from
Debian's ``prometheus`` package, as it does shellcheck.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool is not installed (Debian: apt-get install prometheus; .ci/run does it)",
)

_LABEL = re.compile(r"\{\{\s*\$labels\.([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}")
_VALUE = re.compile(r"\{\{\s*\$value\s*\}\}")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=120)


def check_rules(rules: str, tmp: Path) -> None:
    """Fails with promtool's own words unless Prometheus would load ``rules``."""
    path = tmp / "rules.yaml"
    path.write_text(rules)
    done = _run("check", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def run_rule_tests(rules: str, tests: list[dict[str, Any]], tmp: Path) -> None:
    """Runs promtool's unit tests ``tests`` (its ``tests:`` list) against ``rules``; fails with
    promtool's report of every expected and actual alert that differ."""
    (tmp / "rules.yaml").write_text(rules)
    spec = {"rule_files": ["rules.yaml"], "evaluation_interval": "1m", "tests": tests}
    path = tmp / "rules.test.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False, width=200))
    done = _run("test", "rules", str(path))
    assert done.returncode == 0, done.stdout + done.stderr


def go_float(value: float) -> str:
    """``value`` as an alert template prints ``{{ $value }}``: Go's ``%v``, the shortest
    decimal that round-trips, without a trailing ``.0``. Go switches to exponent notation
    (``1.2345675e+06``) below 1e-4 and from 1e6 on; no alert here prints such a value, so
    those are refused rather than guessed."""
    assert value == 0 or 1e-4 <= abs(value) < 1e6, f"{value!r}: exponent form not modelled"
    return str(int(value)) if value.is_integer() else repr(value)


def expand(template: str, labels: dict[str, str], value: float) -> str:
    """An annotation template with ``{{ $labels.<name> }}`` and ``{{ $value }}`` filled in, as
    Prometheus expands it for an alert; any other template action is refused, not guessed."""
    text = _LABEL.sub(lambda m: labels.get(m.group(1), ""), template)
    text = _VALUE.sub(lambda _: go_float(value), text)
    assert "{{" not in text, f"template action not modelled here: {template!r}"
    return text


def config_verdict(config: dict[str, Any], tmp: Path) -> tuple[bool, str]:
    """(whether promtool loads the scrape configuration ``config``, its own words), with each
    ``kubernetes_sd_configs`` swapped for a static target (see above)."""
    copy = {**config, "scrape_configs": []}
    for job in config.get("scrape_configs", []):
        job = dict(job)
        if job.pop("kubernetes_sd_configs", None) is not None:
            job["static_configs"] = [{"targets": ["127.0.0.1:9090"]}]
        copy["scrape_configs"].append(job)
    path = tmp / "prometheus.yaml"
    path.write_text(yaml.safe_dump(copy, sort_keys=False))
    done = _run("check", "config", str(path))
    return done.returncode == 0, done.stdout + done.stderr
