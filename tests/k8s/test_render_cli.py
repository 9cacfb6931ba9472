"""``k8s.render`` (what `make manifests` writes): the files, their order and notes, and the lock
it records. The command itself: tests/scripts/commands/test_manifests.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infra.cdk.written import RECORD, OutputFolder
from infra.config import load_config
from k8s import render as render_module
from k8s.app import build_charts
from k8s.render import CHART_FILE, KYVERNO_VALUES, LOCK_DIR, kubectl_steps, render, render_config
from scripts.commands import dashboard
from scripts.lib.errors import Exit
from tests.support.config import env_config, env_fsx


@pytest.fixture(autouse=True)
def locks_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """main() also writes the environment's lock; keep it out of the repository's k8s/locks."""
    monkeypatch.setattr(render_module, "LOCK_DIR", tmp_path / "locks")


def test_the_notes_give_each_file_its_sync_wave_in_apply_order(tmp_path: Path) -> None:
    files = render("dev", tmp_path / "out", lock_dir=tmp_path / "locks")
    notes = (tmp_path / "out" / "README.md").read_text()
    rows = [f"| `{f.name}` | {wave} |" for wave, f in enumerate(files)]
    assert "\n".join(rows) in notes


def test_a_render_removes_the_manifests_a_previous_render_left(tmp_path: Path) -> None:
    """A file of a chart that is off now (e.g. Curvine's after a switch to FSx) must not stay
    where `kubectl apply -k` or Argo CD would still apply it."""
    out = tmp_path / "out"
    # What an earlier render wrote (the record says so): charts that are off now.
    OutputFolder(out).write({"20-curvine.yaml": "kind: Stale\n", "99-old.yaml": "kind: Stale\n"})
    files = render("dev", out, lock_dir=tmp_path / "locks")
    assert sorted(p.name for p in out.glob("*.yaml")) == sorted(
        [f.name for f in files] + ["kustomization.yaml", KYVERNO_VALUES]
    )
    assert "Stale" not in "".join(p.read_text() for p in out.glob("*.yaml"))


@pytest.mark.parametrize("env", ["dev", "test", "prod"])
def test_rendering_a_shipped_environment_rewrites_its_committed_lock_byte_for_byte(
    env: str, tmp_path: Path
) -> None:
    """The lock records what may not change after a first deploy; `make manifests` writes it
    where it is asked to (creating the folder), and for a shipped environment writes exactly the
    committed file, so rendering leaves no diff in git."""
    locks = tmp_path / "a" / "locks"
    render(env, tmp_path / "out", lock_dir=locks)
    assert (locks / f"{env}.json").read_text() == (LOCK_DIR / f"{env}.json").read_text()


def _dashboard(out: Path) -> dict[str, str]:
    assert dashboard.run(dashboard.DashboardOptions(out=out)) == Exit.OK
    return {
        p.name: p.read_text()
        for p in out.iterdir()
        if p.name in ("alert-rules.yaml", "grafana-dashboard.json")
    }


def test_a_render_keeps_the_alert_rules_and_dashboard_written_beside_it(tmp_path: Path) -> None:
    """`make dashboard` then `make manifests`: the renderer deletes only files it writes."""
    out = tmp_path / "dist"
    written = _dashboard(out)
    assert set(written) == {"alert-rules.yaml", "grafana-dashboard.json"}
    render("dev", out, lock_dir=tmp_path / "locks")
    assert {n: (out / n).read_text() for n in written} == written


def test_the_dashboard_keeps_the_manifests_written_before_it(tmp_path: Path) -> None:
    """`make manifests` then `make dashboard`: the chart files and kustomization stay as written,
    and the kustomization does not list the dashboard's files (they are not cluster objects)."""
    out = tmp_path / "dist"
    files = render("dev", out, lock_dir=tmp_path / "locks")
    before = {p.name: p.read_text() for p in out.iterdir() if p.name != RECORD}
    _dashboard(out)
    assert {n: (out / n).read_text() for n in before} == before
    assert {p.name for p in out.iterdir()} == set(before) | {
        RECORD,
        "alert-rules.yaml",
        "grafana-dashboard.json",
        "curvine-fuse-dashboard.json",  # dev's L2 is on Curvine: its own FUSE dashboard
    }
    kustomization = (out / "kustomization.yaml").read_text()
    assert "alert-rules" not in kustomization and "dashboard" not in kustomization
    assert files


@pytest.mark.parametrize("env", ["dev", "fsx"])
def test_every_chart_file_follows_the_name_the_renderer_cleans_up(env: str) -> None:
    """A chart file named outside the scheme would stay behind once its chart is off."""

    charts = build_charts(env_config(env), fsx=env_fsx(env))
    names = [f"{name}.yaml" for name, _ in charts.ordered]
    assert names and all(CHART_FILE.fullmatch(n) for n in names), names
    assert not CHART_FILE.fullmatch("alert-rules.yaml")
    assert not CHART_FILE.fullmatch("kustomization.yaml")


@pytest.mark.parametrize("env", ["dev", "test", "prod", "fsx"])
def test_the_notes_apply_every_written_file_with_kubectl_in_its_order(
    env: str, tmp_path: Path
) -> None:
    """dist/<env>/README.md's kubectl steps: every chart file once, in apply order, with the
    Kyverno install between the files before the policy and the policy."""

    config = env_config(env)
    files = render_config(config, tmp_path / "out", tmp_path / "locks", fsx=env_fsx(env))
    notes = (tmp_path / "out" / "README.md").read_text()
    name = config.environment
    assert re.findall(rf"-f dist/{name}/([\w.-]+\.yaml)", notes) == [f.name for f in files]
    helm = notes.rindex("helm install kyverno kyverno --repo")  # the steps, after the notes
    assert notes.index(f"-f dist/{name}/40-l2-volume.yaml") < helm
    assert helm < notes.index(f"-f dist/{name}/50-l2-policy.yaml")


def test_without_installing_kyverno_the_steps_say_the_cluster_serves_the_policy() -> None:

    config = load_config("dev")
    kv = config.kvcache
    own = config.model_copy(
        update={
            "kvcache": kv.model_copy(
                update={"kyverno": kv.kyverno.model_copy(update={"install": False})}
            )
        }
    )
    steps = kubectl_steps(own, ["00-namespaces.yaml", "50-l2-policy.yaml"], "dist/dev")
    assert "helm install" not in steps
    assert steps.splitlines()[1:] == [
        "kubectl apply -f dist/dev/00-namespaces.yaml",
        "# kvcache.kyverno.install: false: the cluster's Kyverno serves 50-l2-policy.yaml",
        "kubectl apply -f dist/dev/50-l2-policy.yaml",
    ]
