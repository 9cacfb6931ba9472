"""Run checkov over the synthesized templates and the rendered Kubernetes YAML; fail on any finding
that checkov-skips.yaml does not accept with a reason.

    python -m tools.run_checkov --checkov .venv-checkov/bin/checkov --cfn cdk.out --k8s dist/dev

checkov lives in its own virtualenv (requirements-checkov.txt): it pins boto3, packaging and
networkx to versions older than the ones this project pins. `make lint` creates it.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

SKIPS_FILE = Path(__file__).resolve().parents[1] / "checkov-skips.yaml"
CHECK_ID = re.compile(r"^CKV2?_[A-Z0-9]+_\d+$")


@dataclass(frozen=True)
class Skip:
    id: str
    reason: str
    resources: tuple[str, ...] = ()

    def covers(self, finding: dict[str, Any]) -> bool:
        if finding["check_id"] != self.id:
            return False
        return not self.resources or any(
            fnmatch.fnmatchcase(finding["resource"], p) for p in self.resources
        )


class SkipFileError(ValueError):
    """checkov-skips.yaml is malformed (the message names the entry)."""


def load_skips(path: Path = SKIPS_FILE) -> list[Skip]:
    entries = (yaml.safe_load(path.read_text()) or {}).get("skips") or []
    skips = []
    for i, entry in enumerate(entries):
        where = f"{path.name}: skips[{i}]"
        if not isinstance(entry, dict) or not CHECK_ID.match(str(entry.get("id", ""))):
            raise SkipFileError(f"{where}: id must be a checkov check id like CKV_AWS_18")
        reason = str(entry.get("reason") or "").strip()
        if len(reason) < 20:
            raise SkipFileError(f"{where} ({entry['id']}): give the reason (a sentence)")
        resources = entry.get("resources") or []
        if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
            raise SkipFileError(f"{where} ({entry['id']}): resources must be a list of patterns")
        skips.append(Skip(entry["id"], reason, tuple(resources)))
    return skips


def failed_checks(report: Any) -> list[dict[str, Any]]:
    """The failed checks of checkov's JSON output (one report or a list of them)."""
    reports = report if isinstance(report, list) else [report]
    return [f for r in reports for f in (r.get("results") or {}).get("failed_checks") or []]


def unaccepted(findings: list[dict[str, Any]], skips: list[Skip]) -> list[dict[str, Any]]:
    return [f for f in findings if not any(s.covers(f) for s in skips)]


def unused(skips: list[Skip], findings: list[dict[str, Any]]) -> list[Skip]:
    """Entries no finding of this run needs: stale, or needed only by another environment."""
    return [s for s in skips if not any(s.covers(f) for f in findings)]


def unknown_ids(skips: list[Skip], known: set[str]) -> list[str]:
    return sorted({s.id for s in skips} - known)


def _checkov(checkov: str, args: list[str]) -> Any:
    proc = subprocess.run(
        [checkov, *args, "--quiet", "--compact", "--output", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode not in (0, 1) or not proc.stdout.strip():
        raise RuntimeError(f"checkov {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


def known_check_ids(checkov: str) -> set[str]:
    proc = subprocess.run([checkov, "--list"], capture_output=True, text=True, check=True)
    return set(re.findall(r"\bCKV2?_[A-Z0-9]+_\d+\b", proc.stdout))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkov", default=".venv-checkov/bin/checkov")
    parser.add_argument("--cfn", type=Path, default=Path("cdk.out"))
    parser.add_argument("--k8s", type=Path, required=True)
    args = parser.parse_args(argv)
    if not args.k8s.is_dir():
        # `make synth` leaves dist/<env> unwritten with an FSx L2 (it names the deployed file
        # system, which an offline synth cannot know).
        print(
            f"error: --k8s {args.k8s}: no such folder; `make manifests` writes it (with "
            "kvcache.l2_backend fsx_lustre: after `make deploy`)",
            file=sys.stderr,
        )
        return 2
    try:
        skips = load_skips()
    except SkipFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    unknown = unknown_ids(skips, known_check_ids(args.checkov))
    if unknown:
        print(
            f"error: {SKIPS_FILE.name} names checks checkov does not have: {unknown}",
            file=sys.stderr,
        )
        return 2
    findings = failed_checks(
        _checkov(args.checkov, ["-d", str(args.cfn), "--framework", "cloudformation"])
    )
    findings += failed_checks(
        _checkov(args.checkov, ["-d", str(args.k8s), "--framework", "kubernetes"])
    )
    left = unaccepted(findings, skips)
    for f in left:
        print(f"{f['check_id']} {f['resource']} ({f['file_path']}): {f['check_name']}")
    accepted = len(findings) - len(left)
    print(f"checkov: {len(left)} findings to fix, {accepted} accepted in {SKIPS_FILE.name}")
    for skip in unused(skips, findings):
        where = f" for {', '.join(skip.resources)}" if skip.resources else ""
        print(
            f"note: {SKIPS_FILE.name} accepts {skip.id}{where} but nothing in this run fails it: "
            "remove the entry unless another environment needs it"
        )
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
