"""The README and docs/ say what the code does: the `make` targets, CLI commands, paths and
counts they name exist, their links and anchors resolve, and they cite no numbered references."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.main import get_command

from infra.config import load_config
from infra.config.loader import available_environments
from k8s.app import build_charts
from scripts.cli import app
from scripts.lib.environment import stack_names
from tools.kubectl_steps import updated_page

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
MAKE_TARGET = re.compile(r"(?<![\w-])make ([a-z][a-z-]*)")
TARGET_RULE = re.compile(r"^([a-z][a-z -]*?):(?!=)", re.MULTILINE)
LINK = re.compile(r"\]\(([^)#\s]+\.md|[^)#\s]*LICENSE)(#[^)]*)?\)")
ANCHOR_LINK = re.compile(r"\]\(([^)#\s]*)#([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


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


# --- anchors, paths -----------------------------------------------------------------------------


def heading_anchors(text: str) -> set[str]:
    """GitHub's anchor of each heading: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6} (.+)$", FENCE.sub("", text), re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


def test_anchor_detection_can_fail() -> None:
    anchors = heading_anchors(
        "# Top\n## The `make manifests` step (GitOps)\n```\n# not: a heading\n```"
    )
    assert anchors == {"top", "the-make-manifests-step-gitops"}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_anchor_linked_is_a_heading_of_its_page(page: Path) -> None:
    for target, anchor in ANCHOR_LINK.findall(page.read_text()):
        if "://" in target or not (target == "" or target.endswith(".md")):
            continue
        linked = page if target == "" else page.parent / target
        assert linked.exists(), f"{page.name} links to missing {target}"
        assert anchor in heading_anchors(linked.read_text()), (
            f"{page.name} links to {target or page.name}#{anchor}, which has no such heading"
        )


def tracked_text_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True)
    skip = ("k8s/imports/", "k8s/schemas/", "tests/fixtures/")  # upstream files, kept as they are
    suffixes = {".py", ".md", ".yaml", ".yml", ".json", ".toml", ".txt", ".sh", ""}
    return [
        ROOT / name
        for name in out.stdout.splitlines()
        if not name.startswith(skip) and Path(name).suffix in suffixes and (ROOT / name).is_file()
    ]


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout"
)
def test_every_docs_page_named_anywhere_exists() -> None:
    """Code, config field docs, error messages and pages point readers at docs/<page>.md: each
    such page exists (a merged or renamed page leaves none behind)."""
    missing = {
        f"{path.relative_to(ROOT)}: docs/{name}"
        for path in tracked_text_files()
        for name in re.findall(r"docs/([\w.-]+\.md)", path.read_text(errors="replace"))
        if path.name != "CHANGELOG.md" and not (ROOT / "docs" / name).exists()
    }
    assert not missing, sorted(missing)


REPO_PATH = re.compile(
    r"`((?:app\.py|Makefile|\.ci/|\.github/|assets/|config/|docs/|infra/|k8s/|scripts/|stacks/"
    r"|tests/|tools/)[^`\s]*)`"
)


@pytest.mark.parametrize("page", PAGES[:1] + PAGES[2:], ids=lambda p: p.name)
def test_every_repository_path_a_page_names_exists(page: Path) -> None:
    """A path in a code span (`infra/environment/layout.py`, `tests/k8s/test_rehearsal_*.py`)
    exists; placeholders (`config/<env>.yaml`) are skipped."""
    missing = []
    for raw in REPO_PATH.findall(page.read_text()):
        path = raw.split("::")[0].rstrip(".,:;")
        if "<" in path:
            continue
        if not (list(ROOT.glob(path)) if "*" in path else (ROOT / path).exists()):
            missing.append(raw)
    assert not missing, f"{page.name} names paths that do not exist: {missing}"


def test_every_test_a_page_names_by_file_and_function_exists() -> None:
    """`test_file::test_name` in docs/testing.md's tables names a test function of that file
    (of the file at that path, when the path is given: several folders hold a test_run.py)."""
    text = (ROOT / "docs" / "testing.md").read_text()
    named = set(re.findall(r"`((?:[\w/]*/)?)(test_\w+?)(?:\.py)?::(test_\w+)", text))
    assert named, "docs/testing.md names no test"
    files: dict[str, list[Path]] = {}
    for path in (ROOT / "tests").rglob("test_*.py"):
        files.setdefault(path.stem, []).append(path)
    missing = set()
    for folder, stem, fn in named:
        paths = [ROOT / folder / f"{stem}.py"] if folder else files.get(stem, [])
        if not any(p.is_file() and f"def {fn}(" in p.read_text() for p in paths):
            missing.add(f"{folder}{stem}::{fn}")
    assert not missing, sorted(missing)


# --- commands, targets, counts ------------------------------------------------------------------


def test_the_cli_page_lists_exactly_the_clis_commands() -> None:
    group = get_command(app)
    text = (ROOT / "docs" / "cli.md").read_text()
    table = text.split("## Commands", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([a-z-]+)` \|", table, re.MULTILINE))
    assert listed == set(group.commands), (
        f"docs/cli.md's command table: missing {sorted(set(group.commands) - listed)}, "
        f"not a command {sorted(listed - set(group.commands))}"
    )
    # and each `make` target the table names runs that command
    makefile = (ROOT / "Makefile").read_text()
    for command, target in re.findall(r"^\| `([a-z-]+)` \|.*\| `make ([a-z-]+)`", table, re.M):
        rules = re.findall(r"^([a-z][a-z -]*):(?!=).*\n((?:\t.*\n)+)", makefile, re.M)
        (recipe,) = [body for names, body in rules if target in names.split()]
        runs_it = f"$(HPKV) {command} " in recipe or ("$(HPKV) $@ " in recipe and command == target)
        assert runs_it, f"`make {target}` does not run `hpkv {command}`"


def help_targets() -> list[str]:
    return re.findall(r"^## ([a-z-]+): ", (ROOT / "Makefile").read_text(), re.MULTILINE)


def test_every_target_make_help_offers_exists_and_is_documented() -> None:
    documented = set().union(*(named_targets(p.read_text()) for p in PAGES))
    offered = help_targets()
    assert set(offered) <= makefile_targets()
    phony = re.search(r"^\.PHONY: (.*?)(?<!\\)$", (ROOT / "Makefile").read_text(), re.M | re.S)
    assert phony and set(phony.group(1).replace("\\\n", " ").split()) == set(offered)
    undocumented = set(offered) - documented - {"help"}
    assert not undocumented, f"no page names `make {sorted(undocumented)}`"


NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve"
NUMBERS = {w: n for n, w in enumerate(NUMBER_WORDS.split(" "))}


def number(word: str) -> int:
    return int(word) if word.isdigit() else NUMBERS[word.lower()]


def test_the_stack_count_the_docs_give_is_each_shipped_environments() -> None:
    """'the environment's ten stacks' (or 'the N stacks'): the count of
    `infra/environment/layout.py`'s stacks an environment has, in every shipped environment."""
    words = "|".join([*NUMBERS, r"\d+"])
    claim = re.compile(
        rf"\b(?:the|its|all|environment's|dev's|test's|prod's) ({words}) stacks\b", re.I
    )
    claims = [
        (p.name, number(n)) for p in PAGES[:1] + PAGES[2:] for n in claim.findall(p.read_text())
    ]
    assert any(name == "README.md" for name, _ in claims), "the README gives no stack count"
    counts = {env: len(stack_names(load_config(env))) for env in available_environments()}
    wrong = [(name, n) for name, n in claims if set(counts.values()) != {n}]
    assert not wrong, f"stack counts {wrong}; the shipped environments have {counts}"


def test_the_deploy_concurrency_the_readme_gives_is_the_makefiles() -> None:
    readme = (ROOT / "README.md").read_text()
    (said,) = re.findall(r"up to (\w+) at a time", readme)
    (value,) = re.findall(r"^CONCURRENCY \?= (\d+)$", (ROOT / "Makefile").read_text(), re.M)
    assert number(said) == int(value)


# --- pages and code describe the product --------------------------------------------------------

NUMBERED_REFERENCE = re.compile(
    r"\b(issue|item) \d|#\d{2,}\b|\bticket|\bthe issue\b|\bissue's\b", re.I
)


def test_numbered_reference_detection_can_fail() -> None:
    # written so that this file does not match itself
    assert NUMBERED_REFERENCE.search(f"Target (issue {12}): within 2x")
    assert NUMBERED_REFERENCE.search(f"see #{431}") and NUMBERED_REFERENCE.search(
        "the iss" + "ue's target"
    )
    assert not NUMBERED_REFERENCE.search("https://github.com/org/repo/issues/431 and the issuer")


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a checkout"
)
def test_no_page_or_source_file_cites_a_numbered_reference() -> None:
    """Pages, code, tests, config and CI cite no numbered references such as 'issue N' (links to
    upstream sources are fine). CHANGELOG.md is history, told without numbers."""
    found = []
    for path in tracked_text_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel == "CHANGELOG.md":
            continue
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            text = re.sub(r"https?://\S+", "", line)
            if NUMBERED_REFERENCE.search(text):
                found.append(f"{rel}:{n}: {line.strip()[:100]}")
    assert not found, "\n".join(found)
