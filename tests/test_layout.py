"""The shape of the code base, so it stays easy to find one's way in: no module over 500 lines,
no import cycle among the project's own packages, every function-local import of a project
module says why it is late, test modules share code only through tests/support/ and
tests/doubles/, and infra/ keeps its floor plan (docs/architecture.md): nothing but the package
marker at its root, its folders importing each other one way, and every test of infra/ in the
folder that mirrors the code it tests.

The checks read the sources with ``ast`` and ``tokenize`` (nothing is imported), so they run on
any tree: the project's, and the small crafted trees below that prove each check can fail.
"""

from __future__ import annotations

import ast
import io
import os
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
MAX_LINES = 500
# The project's own code: these packages and the CDK entry point. Tests are sized and their
# late imports checked too, but only the product's packages make up the import graph.
SOURCE_ROOTS = ("infra", "stacks", "k8s", "scripts", "tools", "app.py")
ALL_ROOTS = (*SOURCE_ROOTS, "tests")
# Generated from CRDs by cdk8s import: as long as the schemas they come from.
EXCEPTED = ("k8s/imports",)
# What a test module may import from the tests: shared support and doubles. Importing another
# test module (or a conftest) ties two unrelated files together and collects its tests twice.
TEST_SHARED = ("tests.support", "tests.doubles")
# infra/ is folders only: a module belongs in the folder of what it is (docs/architecture.md).
INFRA = "infra"


def python_files(root: Path, roots: tuple[str, ...] = ALL_ROOTS) -> list[Path]:
    """Every ``.py`` file under ``roots`` of ``root``, but the excepted directories."""
    found: list[Path] = []
    for name in roots:
        top = root / name
        if top.is_file() and top.suffix == ".py":
            found.append(top)
            continue
        for directory, subdirs, files in os.walk(top):
            here = Path(directory)
            subdirs[:] = sorted(
                d
                for d in subdirs
                if d != "__pycache__" and (here / d).relative_to(root).as_posix() not in EXCEPTED
            )
            found.extend(here / f for f in sorted(files) if f.endswith(".py"))
    return found


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def oversized(root: Path, files: list[Path], limit: int = MAX_LINES) -> list[str]:
    """``path: N lines`` for each file longer than ``limit``."""
    lines = {f: len(f.read_text().splitlines()) for f in files}
    return [f"{f.relative_to(root)}: {n} lines" for f, n in lines.items() if n > limit]


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The modules (or names in modules) an import statement names, relative ones resolved."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join([*package, *([base] if base else [])])
    return [f"{base}.{alias.name}" for alias in node.names] + [base]


def _resolve(name: str, modules: set[str]) -> str | None:
    """The project module ``name`` is or lives in (``a.b.Name`` -> ``a.b``), if any."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(root: Path, files: list[Path]) -> dict[str, set[str]]:
    """Module -> the project modules it imports anywhere: at the top, under ``TYPE_CHECKING``,
    or inside a function (a late import does not make a cycle go away)."""
    modules = {module_name(root, f): f for f in files}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom):
                continue
            # ``from a.b import c``: a.b.c when c is a module, else a.b (not both).
            names = _imported(node, module, path.name == "__init__.py")
            if isinstance(node, ast.ImportFrom):
                *members, base = names
                targets = [m for m in members if m in modules] or [base]
            else:
                targets = names
            for name in targets:
                target = _resolve(name, set(modules))
                if target is not None and target != module:
                    graph[module].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as ``[a, b, ..., a]``, or None."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(module: str) -> list[str] | None:
        path.append(module)
        on_path.add(module)
        for target in sorted(graph.get(module, ())):
            if target in on_path:
                return [*path[path.index(target) :], target]
            if target not in done and (cycle := visit(target)) is not None:
                return cycle
        on_path.discard(path.pop())
        done.add(module)
        return None

    for module in sorted(graph):
        if module not in done and (cycle := visit(module)) is not None:
            return cycle
    return None


def _function_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports inside a function body (at any depth below it)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    yield inner


def _comment_lines(source: str) -> tuple[set[int], set[int]]:
    """Lines holding a comment, and lines that are nothing but a comment."""
    anywhere: set[int] = set()
    alone: set[int] = set()
    lines = source.splitlines()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row = token.start[0]
            anywhere.add(row)
            if lines[row - 1].strip().startswith("#"):
                alone.add(row)
    return anywhere, alone


def unexplained_late_imports(root: Path, files: list[Path]) -> list[str]:
    """``path:line: import`` for each function-local import of a project module with no comment
    on its lines or on the line just above it."""
    project = {module_name(root, f) for f in python_files(root)}
    found: list[str] = []
    for path in files:
        source = path.read_text()
        module = module_name(root, path)
        anywhere, alone = _comment_lines(source)
        seen: set[int] = set()
        for node in _function_imports(ast.parse(source, str(path))):
            if node.lineno in seen:
                continue
            seen.add(node.lineno)
            names = _imported(node, module, path.name == "__init__.py")
            if not any(_resolve(n, project) for n in names):
                continue  # a standard-library or third-party module
            end = node.end_lineno or node.lineno
            if any(n in anywhere for n in range(node.lineno, end + 1)):
                continue
            if node.lineno - 1 in alone:
                continue
            found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return found


def imports_of_test_modules(root: Path) -> list[str]:
    """``module -> imported`` for each import, in the tests, of a module outside TEST_SHARED."""
    graph = import_graph(root, python_files(root, ("tests",)))
    shared = tuple(f"{name}." for name in TEST_SHARED)
    return [
        f"{module} -> {target}"
        for module, targets in sorted(graph.items())
        for target in sorted(targets)
        if target != "tests" and target not in TEST_SHARED and not target.startswith(shared)
    ]


def infra_root_modules(root: Path) -> list[str]:
    """Modules at infra/'s root other than its package marker, and a marker that holds code."""
    found = [p.name for p in sorted((root / INFRA).glob("*.py")) if p.name != "__init__.py"]
    marker = root / INFRA / "__init__.py"
    if marker.exists():
        body = ast.parse(marker.read_text()).body
        if any(not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)) for n in body):
            found.append("__init__.py holds code")
    return found


def folder_cycle(root: Path) -> list[str] | None:
    """One cycle among infra/'s folders (``infra.config -> infra.metrics -> infra.config``): a
    module of one folder importing a folder that imports it back, at any depth."""
    graph = import_graph(root, python_files(root, (INFRA,)))

    def folder(module: str) -> str:
        return ".".join(module.split(".")[:2])

    folders: dict[str, set[str]] = {}
    for module, targets in graph.items():
        edges = folders.setdefault(folder(module), set())
        edges |= {folder(t) for t in targets if folder(t) != folder(module)}
    return find_cycle(folders)


def misplaced_infra_tests(root: Path) -> list[str]:
    """Test modules under tests/infra/ not in the folder mirroring infra/'s, or not named after a
    module or folder there (``test_<module>.py`` or ``test_<module>_<topic>.py``)."""
    found: list[str] = []
    for path in sorted((root / "tests" / INFRA).rglob("test_*.py")):
        folder = root / path.parent.relative_to(root / "tests")
        subject = path.stem.removeprefix("test_")
        names = (
            {p.stem for p in folder.glob("*.py")} | {p.name for p in folder.iterdir() if p.is_dir()}
            if folder.is_dir()
            else set()
        )
        names.discard("__init__")
        if not any(subject == n or subject.startswith(f"{n}_") for n in names):
            found.append(path.relative_to(root).as_posix())
    return found


def opt_outs(root: Path, files: list[Path]) -> list[str]:
    """``path:line`` of each comment that turns the formatter off."""
    found = []
    for path in files:
        with path.open("rb") as handle:
            for token in tokenize.tokenize(handle.readline):
                text = token.string.replace(" ", "")
                if token.type == tokenize.COMMENT and text.startswith(("#fmt:skip", "#fmt:off")):
                    found.append(f"{path.relative_to(root).as_posix()}:{token.start[0]}")
    return found


# --- the project ---------------------------------------------------------------------------


def test_no_module_is_longer_than_500_lines() -> None:
    too_long = oversized(REPO, python_files(REPO))
    assert not too_long, "split these modules by concern:\n" + "\n".join(too_long)


def test_no_code_opts_out_of_the_formatter() -> None:
    """ruff formats every line: a layout kept by hand (``# fmt: skip``, ``# fmt: off``) drifts
    from the rest and spreads by copying."""
    opted = opt_outs(REPO, python_files(REPO))
    assert not opted, "let ruff format these lines:\n" + "\n".join(opted)


def test_the_project_packages_import_each_other_without_a_cycle() -> None:
    cycle = find_cycle(import_graph(REPO, python_files(REPO, SOURCE_ROOTS)))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_every_late_import_of_a_project_module_says_why() -> None:
    late = unexplained_late_imports(REPO, python_files(REPO))
    assert not late, (
        "import these at the top, or say on the line (or the one above) why they are late:\n"
        + "\n".join(late)
    )


def test_test_modules_import_only_the_shared_test_support() -> None:
    found = imports_of_test_modules(REPO)
    assert not found, (
        "move what these share to tests/support/ (helpers) or tests/doubles/ (fakes):\n"
        + "\n".join(found)
    )


def test_infra_root_holds_only_its_package_marker() -> None:
    found = infra_root_modules(REPO)
    assert not found, (
        "move these into the infra/ folder of what they are (docs/architecture.md#where-the-code-"
        "lives):\n" + "\n".join(found)
    )


def test_infra_folders_import_each_other_one_way() -> None:
    cycle = folder_cycle(REPO)
    assert cycle is None, "infra/ folders import each other back: " + " -> ".join(cycle or [])


def test_every_infra_test_is_in_the_folder_mirroring_its_code() -> None:
    found = misplaced_infra_tests(REPO)
    assert not found, (
        "move these to tests/<the code's folder>/test_<module>[_<topic>].py:\n" + "\n".join(found)
    )


# --- each check fails on a crafted violation -----------------------------------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def test_a_formatter_opt_out_is_reported(tmp_path: Path) -> None:
    (tmp_path / "tables.py").write_text(
        "A = [1,  2]  # fmt: skip\n# fmt: off\nB = 1\n# fmt: on\nC = '# fmt: skip'\n"
    )
    opted = opt_outs(tmp_path, [tmp_path / "tables.py"])
    assert opted == ["tables.py:1", "tables.py:2"]  # not "# fmt: on", nor a string


def test_a_501_line_module_is_reported(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {"infra/__init__.py": "", "infra/long.py": "x = 1\n" * 501, "infra/ok.py": "x = 1\n" * 500},
    )
    assert oversized(root, python_files(root)) == ["infra/long.py: 501 lines"]


def test_generated_imports_are_not_sized(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"k8s/imports/crd.py": "x = 1\n" * 900})
    assert oversized(root, python_files(root)) == []


@pytest.mark.parametrize(
    "import_back",
    [
        "from infra.a import A\n",
        "from infra import a\n",
        "from .a import A\n",
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from infra.a import A\n",
        "def f():\n    from infra.a import A  # late\n    return A\n",
    ],
    ids=["from-module", "from-package", "relative", "type-checking", "late"],
)
def test_an_import_cycle_is_named(tmp_path: Path, import_back: str) -> None:
    root = _tree(
        tmp_path,
        {
            "infra/__init__.py": "",
            "infra/a.py": "from infra.b import B\nA = 1\n",
            "infra/b.py": import_back + "B = 2\n",
            "stacks/c.py": "from infra.a import A\n",
        },
    )
    assert find_cycle(import_graph(root, python_files(root, SOURCE_ROOTS))) == [
        "infra.a",
        "infra.b",
        "infra.a",
    ]


def test_imports_one_way_are_no_cycle(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "infra/__init__.py": "from infra.a import A\n",
            "infra/a.py": "from infra.b import B\nA = 1\n",
            "infra/b.py": "import json\nB = 2\n",
            "stacks/c.py": "from infra import A\nfrom infra.b import B\n",
        },
    )
    assert find_cycle(import_graph(root, python_files(root, SOURCE_ROOTS))) is None


def test_a_late_project_import_without_a_reason_is_reported(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "infra/__init__.py": "",
            "infra/a.py": "A = 1\n",
            "tests/test_x.py": (
                "def bare():\n"
                "    from infra.a import A\n"
                "    return A\n"
                "def on_the_line():\n"
                "    from infra.a import A  # the reason\n"
                "    return A\n"
                "def above():\n"
                "    # the reason\n"
                "    from infra.a import A\n"
                "    return A\n"
                "def third_party():\n"
                "    import json\n"
                "    return json\n"
                "def string_is_no_comment():\n"
                "    s = '# not a comment'\n"
                "    from infra.a import A\n"
                "    return A, s\n"
            ),
        },
    )
    assert unexplained_late_imports(root, python_files(root)) == [
        "tests/test_x.py:2: from infra.a import A",
        "tests/test_x.py:16: from infra.a import A",
    ]


def test_a_test_module_importing_another_is_reported(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "tests/__init__.py": "",
            "tests/support/config.py": "from tests.doubles.kube import Kube\nCFG = 1\n",
            "tests/doubles/__init__.py": "",
            "tests/doubles/kube.py": "Kube = 1\n",
            "tests/k8s/conftest.py": "from tests.support.config import CFG\nX = 1\n",
            "tests/k8s/test_a.py": "from tests.k8s.conftest import X\nfrom tests import support\n",
            "tests/k8s/test_b.py": "from tests.k8s import test_a\nfrom tests.doubles import kube\n",
        },
    )
    assert imports_of_test_modules(root) == [
        "tests.k8s.test_a -> tests.k8s.conftest",
        "tests.k8s.test_b -> tests.k8s.test_a",
    ]


def test_a_module_at_infras_root_is_reported(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "infra/__init__.py": '"""The marker."""\n',
            "infra/loose.py": "X = 1\n",
            "infra/config/__init__.py": "",
            "infra/config/model.py": "X = 1\n",
        },
    )
    assert infra_root_modules(root) == ["loose.py"]


def test_code_in_infras_package_marker_is_reported(tmp_path: Path) -> None:
    root = _tree(tmp_path, {"infra/__init__.py": '"""The marker."""\nX = 1\n'})
    assert infra_root_modules(root) == ["__init__.py holds code"]
    plain = _tree(tmp_path / "plain", {"infra/__init__.py": '"""The marker."""\n'})
    assert infra_root_modules(plain) == []


def test_folders_importing_each_other_back_are_named(tmp_path: Path) -> None:
    """No module cycle, yet config's rules import a budget module that imports config back."""
    files = {
        "infra/__init__.py": "",
        "infra/config/__init__.py": "",
        "infra/config/model.py": "X = 1\n",
        "infra/config/rules.py": "from infra.budget.node import N\n",
        "infra/budget/__init__.py": "",
        "infra/budget/node.py": "from infra.config.model import X\nN = X\n",
        "infra/facts/__init__.py": "",
        "infra/facts/gpus.py": "G = 1\n",
    }
    root = _tree(tmp_path, files)
    assert find_cycle(import_graph(root, python_files(root, (INFRA,)))) is None
    assert folder_cycle(root) == ["infra.budget", "infra.config", "infra.budget"]
    one_way = {**files, "infra/budget/node.py": "from infra.facts.gpus import G\nN = G\n"}
    assert folder_cycle(_tree(tmp_path / "one-way", one_way)) is None


def test_a_test_outside_the_mirror_of_its_code_is_reported(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "infra/__init__.py": "",
            "infra/metrics/__init__.py": "",
            "infra/metrics/scaling.py": "X = 1\n",
            "tests/infra/metrics/test_scaling.py": "",
            "tests/infra/metrics/test_scaling_alert.py": "",
            "tests/infra/metrics/test_scalingx.py": "",
            "tests/infra/test_scaling.py": "",
            "tests/infra/gone/test_scaling.py": "",
        },
    )
    assert misplaced_infra_tests(root) == [
        "tests/infra/gone/test_scaling.py",
        "tests/infra/metrics/test_scalingx.py",
        "tests/infra/test_scaling.py",
    ]
