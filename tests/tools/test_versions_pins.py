"""`make versions` finds the pins in the product's own files (a pin added to one shows up with no
change to the tool), and its CLI reports against the registries pip and npm would use: here a
real HTTP server on 127.0.0.1 serving PyPI JSON API documents (https://docs.pypi.org/api/json/)
and npm abbreviated metadata (npm/registry docs/responses/package-metadata.md); no network."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from infra.config import ConfigError, load_config
from k8s.policy import KYVERNO_REPOSITORY
from tests.support.config import env_raw
from tests.support.http_documents import Documents, closed_port, serving
from tools.versions.pins import config_pins, npm_pins, requirement_pins, workflow_pins

ROOT = Path(__file__).resolve().parents[2]


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tools.versions", *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_pin_added_to_a_requirements_file_is_found(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("# c\nalpha==1.0\n")
    (tmp_path / "requirements-extra.txt").write_text(
        "-r requirements.txt\nNew_Pkg[extra]==2.3.4  # why\n\nloose>=1\n"
    )
    (tmp_path / "tests" / "server" / "requirements").mkdir(parents=True)
    (tmp_path / "tests" / "server" / "requirements" / "v1.txt").write_text("srv==0.1\n")
    found = {(p.name, p.pinned, p.where) for p in requirement_pins(tmp_path)}
    assert found == {
        ("alpha", "1.0", "requirements.txt:2"),
        ("new-pkg", "2.3.4", "requirements-extra.txt:2"),
        ("loose", ">=1", "requirements-extra.txt:4"),
        ("srv", "0.1", "tests/server/requirements/v1.txt:1"),
    }


def test_a_line_pip_cannot_read_is_one_error_line(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("ok==1.0\nnot a requirement\n")
    with pytest.raises(ConfigError) as caught:
        requirement_pins(tmp_path)
    assert (caught.value.source, caught.value.field) == ("requirements.txt", "line 2")
    assert "\n" not in str(caught.value) and "fix: " in str(caught.value)


def test_the_repositorys_own_pins_are_all_found() -> None:
    """Every ``name==version`` line of every requirements file, as pip reads it."""
    found = {(p.name, p.pinned) for p in requirement_pins(ROOT)}
    files = [
        *ROOT.glob("requirements*.txt"),
        *ROOT.glob("tests/runtime/requirements/*.txt"),
        *ROOT.glob("tests/server/requirements/*.txt"),
    ]
    expected = set()
    for path in files:
        for line in path.read_text().splitlines():
            if re.match(r"^[A-Za-z0-9]", line):
                req = Requirement(line.split(" #")[0])
                expected.add(
                    (
                        req.name.lower().replace("_", "-").replace(".", "-"),
                        next(iter(req.specifier)).version,
                    )
                )
    assert expected <= found
    package = json.loads((ROOT / "package.json").read_text())["devDependencies"]
    assert {(p.name, p.pinned) for p in npm_pins(ROOT)} == set(package.items())
    assert {p.name for p in workflow_pins(ROOT)} >= {"actions/checkout", "actions/setup-python"}


def test_the_configs_pins_come_from_the_config_model() -> None:
    config = load_config("prod")
    pins = [p for p in config_pins() if p.where.startswith("config/prod.yaml")]
    by_key = {p.where.split(": ", 1)[1]: p for p in pins}
    endpoint = config.kvcache.endpoints[0]
    image = by_key["kvcache.endpoints.0.image"]
    assert f"{image.name}:{image.pinned}" == endpoint.image.removeprefix("docker.io/")
    assert image.registry == "registry-1.docker.io"
    curvine = by_key["kvcache.curvine.image"]
    assert (curvine.registry, curvine.name, curvine.pinned) == (
        "ghcr.io",
        "curvineio/curvine",
        config.kvcache.curvine.version,
    )
    chart = by_key["kvcache.kyverno.chart_version"]
    assert (chart.kind, chart.name, chart.pinned, chart.registry) == (
        "helm",
        "kyverno",
        config.kvcache.kyverno.chart_version,
        KYVERNO_REPOSITORY,
    )
    git = by_key["hyperpod.dependencies_chart.commit"]
    assert (git.kind, git.pinned) == ("git", config.hyperpod.dependencies_chart.commit)
    assert by_key["eks.addons.vpc_cni"].pinned == config.eks.addons.vpc_cni
    assert by_key["addons.inference_operator.version"].kind == "eks"


def test_an_image_set_in_a_config_shows_up_by_itself(tmp_path: Path) -> None:
    raw = env_raw("dev")
    raw["kvcache"]["endpoints"][0]["image"] = "quay.io/someorg/server:v2.1.0"
    (tmp_path / "dev.yaml").write_text(json.dumps(raw))
    pins = {p.where.split(": ", 1)[1]: p for p in config_pins(tmp_path)}
    image = pins["kvcache.endpoints.0.image"]
    assert (image.registry, image.name, image.pinned) == ("quay.io", "someorg/server", "v2.1.0")


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_the_cli_reports_pypi_and_npm_and_exits_0_when_behind() -> None:
    """Every package is a release behind on this registry: still exit 0 (it is a report)."""
    documents = Documents()

    releases = json.dumps(
        {"releases": {"0.0.1": [{"yanked": False}], "999.0.0": [{"yanked": False}]}}
    ).encode()

    with serving(documents) as registry:
        for pin in requirement_pins(ROOT):
            registry.add(f"/pypi/{pin.name}/json", releases)
        registry.add("/npm/aws-cdk", json.dumps({"versions": {"9999.0.0": {}}}).encode())
        proc = _cli(
            "--only",
            "pypi,npm",
            "--json",
            "--pypi-index",
            f"{registry.base}/simple",
            "--npm-registry",
            f"{registry.base}/npm/",
        )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    rows = {(r["kind"], r["component"], r["pinned"]): r for r in report["pins"]}
    pinned_cdk = next(p.pinned for p in requirement_pins(ROOT) if p.name == "aws-cdk-lib")
    assert rows[("pypi", "aws-cdk-lib", pinned_cdk)]["newest"] == "999.0.0"
    assert rows[("pypi", "aws-cdk-lib", pinned_cdk)]["status"] == "behind"
    cli = json.loads((ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    assert rows[("npm", "aws-cdk", cli)]["newest"] == "9999.0.0"
    assert report["unreachable"] == {}
    assert {r["kind"] for r in report["pins"]} == {"pypi", "npm"}


def test_the_cli_says_unreachable_once_per_registry_and_exits_0() -> None:
    pypi, npm = closed_port(), closed_port()
    proc = _cli(
        "--only",
        "pypi,npm",
        "--timeout",
        "2",
        "--pypi-index",
        f"http://127.0.0.1:{pypi}/simple",
        "--npm-registry",
        f"http://127.0.0.1:{npm}/",
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    unreachable = [line for line in lines if line.startswith("not reachable: ")]
    assert sorted(line.split(": ")[1] for line in unreachable) == sorted(
        [f"127.0.0.1:{pypi}", f"127.0.0.1:{npm}"]
    )
    rows = [line for line in lines if line.startswith(("pypi ", "npm "))]
    assert rows and all(line.split()[5] == "unreachable" for line in rows)


@pytest.mark.parametrize(
    ("argv", "wrong"), [(["--only", "pypi,maven"], "maven"), (["--timeout", "0"], "'0'")]
)
def test_a_bad_argument_is_one_line_and_exit_2(argv: list[str], wrong: str) -> None:
    proc = _cli(*argv)
    assert proc.returncode == 2
    assert wrong in proc.stderr and "allowed: " in proc.stderr and "Traceback" not in proc.stderr
