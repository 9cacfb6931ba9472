"""Compare the resources' logical IDs of two revisions, environment by environment.

    python -m tools.logical_ids compare BASE [HEAD]     # exit 1 on an unexpected difference
    python -m tools.logical_ids snapshot [REV] --out ids.json
    python -m tools.logical_ids diff BASE [HEAD]        # whole templates, asset hashes aside

A logical ID that changes is a resource CloudFormation replaces (or, for a stateful one, deletes
with its data), so a change that only moves code must leave every ID as it was. Each revision is
checked out into a temporary worktree and synthesized there through ``app.py`` (the one entry
point every revision has) with the interpreter running this tool: dev, test and prod as
committed, and variants written over a copy of them: prod with its delivery pipeline, dev
pointed at an existing cluster, dev with its L2 on FSx for Lustre. HEAD defaults to the working
tree (its uncommitted changes to tracked files included). ``--allow FILE`` names expected
differences: a YAML mapping of ``<template file>/<logical id>`` to the reason it is safe.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]

# Variants written over a committed config before synth: (name, base env, overlay, -c flags).
PIPELINE_OVERLAY: dict[str, Any] = {
    "pipeline": {
        "enabled": True,
        "connection_arn": "arn:aws:codeconnections:us-west-2:111122223333:connection/"
        "12345678-1234-1234-1234-123456789012",
        "repository": "example-org/hyperpod-kvcache",
        "nightly_recreate": True,
        "github_actions": {"deploy_role_name": "hyperpod-kvcache-github-deploy"},
    }
}
EXISTING_OVERLAY: dict[str, Any] = {
    "existing_cluster": {
        "eks_cluster_name": "team-eks",
        "hyperpod_cluster_name": "team-hyperpod",
        "hyperpod_cluster_arn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
        "kubectl_role_arn": "arn:aws:iam::111122223333:role/team-kubectl",
        "oidc_provider_arn": "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2."
        "amazonaws.com/id/EXAMPLED539D4633E53DE1B71EXAMPLE",
        # The ALB controller's role is scoped to the cluster's VPC: config requires it.
        "vpc_id": "vpc-0beef1111aaaa2222",
    },
    "network": None,  # the cluster brings its own
    "hyperpod": {
        "gpu_group": {"name": "gpu", "instance_type": "ml.g6e.4xlarge", "instance_count": 2},
        "system_group": {"name": "system", "instance_type": "ml.c5.4xlarge", "instance_count": 1},
    },
}
FSX_OVERLAY: dict[str, Any] = {
    "kvcache": {
        "l2_backend": "fsx_lustre",
        "l2_backend_switch_confirmed": True,  # dev's lock records Curvine
        "fsx": {
            "data_repository": {"bucket": "amzn-s3-demo-kv-archive", "bucket_region": "us-west-2"}
        },
    }
}
VARIANTS: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("dev", "dev", {}, []),
    ("test", "test", {}, []),
    ("prod", "prod", {}, []),
    ("pipeline", "prod", PIPELINE_OVERLAY, ["-c", "pipeline=true"]),
    ("existing-cluster", "dev", EXISTING_OVERLAY, []),
    ("fsx", "dev", FSX_OVERLAY, []),
]

Snapshot = dict[str, dict[str, str]]  # "<variant>/<template file>" -> logical id -> type


def _git(*args: str, cwd: Path = REPO) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout.strip()


def working_tree_commit() -> str:
    """A commit of the working tree's tracked files (HEAD when nothing is changed)."""
    return _git("stash", "create") or _git("rev-parse", "HEAD")


@contextmanager
def checkout(rev: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="logical-ids-") as tmp:
        tree = Path(tmp) / "tree"
        _git("worktree", "add", "--detach", "--quiet", str(tree), rev)
        try:
            yield tree
        finally:
            _git("worktree", "remove", "--force", str(tree))


def _merge(base: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """``overlay`` over ``base``, mappings merged key by key; a None removes the key."""
    out = dict(base)
    for key, value in overlay.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _chart_fixture(tree: Path) -> list[str]:
    """The HyperPod chart fixture of the tests, so the chart's resources are synthesized too."""
    found = sorted(tree.glob("tests/**/hyperpod-chart/Chart.yaml"))
    return ["-c", f"hyperpodChartDir={found[0].parent}"] if found else []


ASSET_HASH = re.compile(r"[0-9a-f]{64}")


def normalized(template: dict[str, Any]) -> str:
    """A template as comparable text: sorted keys, asset hashes (which change when a handler's
    files move) replaced by a placeholder."""
    return ASSET_HASH.sub("<asset-hash>", json.dumps(template, indent=1, sort_keys=True))


def synthesized(tree: Path) -> dict[str, dict[str, Any]]:
    """Every variant's templates, keyed ``<variant>/<template file>``."""
    result: dict[str, dict[str, Any]] = {}
    env = {**os.environ, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION": "1"}
    for name, base, overlay, flags in VARIANTS:
        config = tree / "config" / f"{base}.yaml"
        original = config.read_text()
        if overlay:
            config.write_text(yaml.safe_dump(_merge(yaml.safe_load(original), overlay)))
        outdir = tree / f"cdk.out.{name}"
        try:
            subprocess.run(
                [
                    sys.executable,
                    "app.py",
                    "-c",
                    f"env={base}",
                    *flags,
                    *_chart_fixture(tree),
                    "--outdir",
                    str(outdir),
                ],
                cwd=tree,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            )
        except subprocess.CalledProcessError as exc:
            raise SystemExit(f"synth of {name} failed in {tree}:\n{exc.stderr[-2000:]}") from None
        finally:
            config.write_text(original)
        for path in sorted(outdir.rglob("*.template.json")):
            result[f"{name}/{path.relative_to(outdir)}"] = json.loads(path.read_text())
    return result


def logical_ids(template: dict[str, Any]) -> dict[str, str]:
    """Each resource's type, and each output's export name (another stack imports it by it)."""
    ids = {k: v["Type"] for k, v in template.get("Resources", {}).items()}
    for key, output in template.get("Outputs", {}).items():
        ids[f"Outputs.{key}"] = f"Output exported as {output.get('Export', {}).get('Name')}"
    return ids


def snapshot(tree: Path) -> Snapshot:
    return {key: logical_ids(t) for key, t in synthesized(tree).items()}


def template_diff(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> str:
    """A unified diff of every template that differs beyond its asset hashes."""
    chunks: list[str] = []
    for key in sorted(before.keys() | after.keys()):
        old = normalized(before[key]).splitlines() if key in before else []
        new = normalized(after[key]).splitlines() if key in after else []
        chunks.extend(difflib.unified_diff(old, new, f"a/{key}", f"b/{key}", lineterm=""))
    return "\n".join(chunks)


def differences(before: Snapshot, after: Snapshot) -> list[str]:
    """One line per logical ID added, removed or retyped, keyed ``<variant>/<template>/<id>``."""
    lines = []
    for template in sorted(before.keys() | after.keys()):
        old, new = before.get(template), after.get(template)
        if old is None or new is None:
            lines.append(f"{template}: template {'added' if old is None else 'removed'}")
            continue
        for logical_id in sorted(old.keys() | new.keys()):
            if logical_id not in new:
                lines.append(f"{template}/{logical_id}: removed ({old[logical_id]})")
            elif logical_id not in old:
                lines.append(f"{template}/{logical_id}: added ({new[logical_id]})")
            elif old[logical_id] != new[logical_id]:
                lines.append(
                    f"{template}/{logical_id}: type {old[logical_id]} -> {new[logical_id]}"
                )
    return lines


def unexpected(lines: list[str], allowed: dict[str, str]) -> list[str]:
    """The lines whose ``<template>/<id>`` (without the variant) is not allowed."""

    def key(line: str) -> str:
        path = line.split(":", 1)[0]
        return path.split("/", 1)[1] if "/" in path else path

    return [line for line in lines if key(line) not in allowed]


def _synthesized(rev: str | None) -> dict[str, dict[str, Any]]:
    with checkout(rev or working_tree_commit()) as tree:
        return synthesized(tree)


def _snapshot_of(rev: str | None) -> Snapshot:
    return {key: logical_ids(t) for key, t in _synthesized(rev).items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    compare = sub.add_parser("compare", help="compare BASE with HEAD (default: working tree)")
    compare.add_argument("base")
    compare.add_argument("head", nargs="?")
    compare.add_argument("--allow", type=Path, help="YAML: '<template>/<id>': reason")
    full = sub.add_parser("diff", help="diff whole templates of BASE and HEAD (asset hashes aside)")
    full.add_argument("base")
    full.add_argument("head", nargs="?")
    snap = sub.add_parser("snapshot", help="write one revision's logical IDs as JSON")
    snap.add_argument("rev", nargs="?")
    snap.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if args.command == "snapshot":
        args.out.write_text(json.dumps(_snapshot_of(args.rev), indent=1, sort_keys=True))
        return 0
    if args.command == "diff":
        text = template_diff(_synthesized(args.base), _synthesized(args.head))
        print(text or "the templates are the same (asset hashes aside)")
        return 1 if text else 0
    allowed: dict[str, str] = yaml.safe_load(args.allow.read_text()) if args.allow else {}
    lines = differences(_snapshot_of(args.base), _snapshot_of(args.head))
    for line in lines:
        print(("expected " if line not in unexpected(lines, allowed) else "") + line)
    bad = unexpected(lines, allowed)
    print(f"{len(lines)} difference(s), {len(bad)} unexpected")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
