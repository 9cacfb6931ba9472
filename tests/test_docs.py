"""The README and docs/ only name `make` targets that exist, and their links resolve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from infra.config import load_config
from k8s.app import build_charts
from tools.kubectl_steps import updated_page

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
MAKE_TARGET = re.compile(r"(?<![\w-])make ([a-z][a-z-]*)")
TARGET_RULE = re.compile(r"^([a-z][a-z -]*?):(?!=)", re.MULTILINE)
LINK = re.compile(r"\]\(([^)#\s]+\.md|[^)#\s]*LICENSE)(#[^)]*)?\)")


def makefile_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return {t for names in TARGET_RULE.findall(text) for t in names.split()}


def named_targets(text: str) -> set[str]:
    """The target of each `make x` or `make x ENV=...` written in a code span or block."""
    code = "\n".join(re.findall(r"```.*?```", text, re.S) + re.findall(r"`([^`\n]+)`", text))
    return set(MAKE_TARGET.findall(code))


def test_makefile_parses_the_targets_help_lists() -> None:
    targets = makefile_targets()
    assert {"synth", "test", "deploy", "help", "manifests", "preflight", "verify"} <= targets
    assert "ENV" not in targets and "export" not in targets


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_make_target_named_exists(page: Path) -> None:
    missing = named_targets(page.read_text()) - makefile_targets()
    assert not missing, f"{page.name} names make targets the Makefile lacks: {sorted(missing)}"


def test_target_detection_can_fail() -> None:
    assert named_targets("run `make synth ENV=test`, then `make deploy-plan`") == {
        "synth",
        "deploy-plan",
    }
    assert named_targets("```bash\nmake nosuch\n```") - makefile_targets() == {"nosuch"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_relative_links_resolve(page: Path) -> None:
    for target, _ in LINK.findall(page.read_text()):
        if "://" in target:
            continue
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"


def test_readme_is_short_and_every_docs_page_is_in_the_index() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250
    index = (ROOT / "docs" / "README.md").read_text()
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert not {p for p in pages if f"]({p})" not in index}, "add the page to docs/README.md"


KUBECTL_PAGE = ROOT / "docs" / "kubernetes-layer.md"


def _dev_chart_files() -> list[str]:
    return [f"{name}.yaml" for name, _ in build_charts(load_config("dev")).ordered]


def test_the_kubectl_steps_apply_every_file_make_manifests_writes_in_its_order() -> None:
    """The documented `kubectl apply` steps (an existing cluster) are the files of
    ``Charts.ordered``, each once, in that order; a file left out (the NetworkPolicies were)
    leaves its objects unapplied."""
    text = KUBECTL_PAGE.read_text()
    applied = re.findall(r"-f dist/dev/([\w.-]+\.yaml)", text)
    assert applied == _dev_chart_files()


def test_the_generated_kubectl_steps_are_up_to_date() -> None:
    text = KUBECTL_PAGE.read_text()
    assert updated_page(text) == text, "docs/kubernetes-layer.md is stale: run `make docs`"


def test_the_file_table_lists_every_chart_file() -> None:
    table = re.findall(r"^\| `(\d\d-[\w-]+\.yaml)` \|", KUBECTL_PAGE.read_text(), re.MULTILINE)
    assert table == _dev_chart_files()
