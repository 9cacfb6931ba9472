"""`python app.py -c env=<name>` (make synth, cdk synth) refuses a config that CloudFormation,
EKS or HyperPod would refuse only at deploy (or that YAML would silently misread), with exit 2
and one line on stderr naming the field, the value, what is allowed and the fix; no traceback.

Through the real entry point: ``app.main`` in this process, its config folder a temporary one
(``infra.config.loader.CONFIG_DIR``), and ``python app.py`` in a subprocess for what only a new
process shows (the Node.js banner jsii prints when it starts). No double.
"""

from __future__ import annotations

import copy
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import app
from infra.config import loader
from infra.config.errors import one_line
from infra.config.observability import ObservabilityConfig
from tests.support.config import BASE, with_overrides

ROOT = Path(__file__).resolve().parents[1]
DEV = (ROOT / "config" / "dev.yaml").read_text()
EXISTING = {
    "eks_cluster_name": "team-eks",
    "hyperpod_cluster_name": "team-hyperpod",
    "hyperpod_cluster_arn": "arn:aws:sagemaker:us-west-2:111122223333:cluster/abcdef123456",
    "oidc_provider_arn": "arn:aws:iam::111122223333:oidc-provider/oidc.eks.us-west-2."
    "amazonaws.com/id/EXAMPLE",
}
GROUPS = {
    "gpu_group": {"name": "gpu", "instance_type": "ml.g6e.4xlarge", "instance_count": 2},
    "system_group": {"name": "system", "instance_type": "ml.c5.4xlarge", "instance_count": 1},
}


def line_of(start: str) -> int:
    """The line number of config/dev.yaml's first line that starts with ``start``."""
    return next(i for i, line in enumerate(DEV.splitlines(), 1) if line.startswith(start))


def dev_with(env: str, **sections: Any) -> str:
    """config/dev.yaml as YAML, renamed ``env``, with top-level keys merged one level deep."""
    raw = copy.deepcopy(BASE)
    raw["environment"] = env
    for key, value in sections.items():
        raw[key] = {**raw[key], **value} if isinstance(value, dict) and key in raw else value
    if "existing_cluster" in sections:
        raw.pop("network")  # the cluster brings its own
    return yaml.safe_dump(raw, sort_keys=False)


def existing_with(env: str, **arns: str) -> str:
    return dev_with(env, existing_cluster={**EXISTING, **arns}, hyperpod=GROUPS)


def endpoint_with(env: str, **fields: Any) -> str:
    endpoint = {**BASE["kvcache"]["endpoints"][0], **fields}
    return dev_with(env, kvcache={"endpoints": [endpoint]})


def hyperpod_subnet(env: str, cidr: str, vpc_cidr: str = "10.192.0.0/16") -> str:
    network = {"vpc_cidr": vpc_cidr, "hyperpod_subnet": {"az_id": "usw2-az2", "cidr": cidr}}
    return dev_with(env, network=network)


# (case, environment, the file's text, the field the line names, what it says is allowed)
CASES: list[tuple[str, str, str, str, str]] = [
    (
        "duplicate top-level key",
        "dup",
        DEV.replace("environment: dev", "environment: dup") + "observability:\n  enabled: false\n",
        f"line {len(DEV.splitlines()) + 1}, column 1",
        "each key once in a mapping ('observability' is already at line "
        f"{line_of('observability:')}",
    ),
    (
        "duplicate nested key",
        "dupnested",
        DEV.replace("environment: dev", "environment: dupnested").replace(
            "  ebs_volume_size_gib: 500\n", "  ebs_volume_size_gib: 500\n    instance_count: 3\n"
        ),
        f"line {line_of('    ebs_volume_size_gib: 500') + 1}, column 5",
        "each key once in a mapping ('instance_count' is already at line "
        f"{line_of('    ebs_volume_size_gib: 500') - 1}",
    ),
    (
        "unquoted Kubernetes version",
        "unquoted",
        DEV.replace("environment: dev", "environment: unquoted").replace('"1.34"', "1.30"),
        "eks.kubernetes_version",
        "text, in quotes (unquoted, YAML reads a version such as 1.30",
    ),
    (
        "unknown key",
        "typo",
        dev_with("typo", eks={"endpoint_acess": "private"}),
        "eks.endpoint_acess",
        "only the keys documented in docs/configuration.md",
    ),
    (
        "tag key under aws:",
        "tagaws",
        dev_with("tagaws", tags={"aws:team": "ml"}),
        "tags",
        "a key that does not start with aws:",
    ),
    (
        "empty tag value",
        "tagempty",
        dev_with("tagempty", tags={"team": ""}),
        "tags.team",
        "a value of 1-256 letters, spaces, digits and _ . : / = + - @",
    ),
    (
        "tag value with a character the tag pattern refuses",
        "tagchar",
        dev_with("tagchar", tags={"team": "ml;infra"}),
        "tags.team",
        "a value of 1-256 letters, spaces, digits and _ . : / = + - @",
    ),
    (
        "tag key too long",
        "taglong",
        dev_with("taglong", tags={"k" * 129: "v"}),
        "tags",
        "a key of 1-128 letters, spaces, digits",
    ),
    (
        "a tag the app sets itself",
        "tagown",
        dev_with("tagown", tags={"environment": "x"}),
        "tags",
        "a key other than project and environment",
    ),
    (
        "192.168.0.0/16 beside a 10.0.0.0/8 VPC",
        "cidr192",
        hyperpod_subnet("cidr192", "192.168.0.0/16"),
        "network.hyperpod_subnet.cidr",
        "a block AWS lets the VPC add beside its primary CIDR",
    ),
    (
        "172.16.0.0/12 beside a 10.0.0.0/8 VPC",
        "cidr172",
        hyperpod_subnet("cidr172", "172.16.0.0/16"),
        "network.hyperpod_subnet.cidr",
        "172.16.0.0/12 cannot be added to a VPC in 10.0.0.0/8",
    ),
    (
        "10.0.0.0/16 beside a VPC in 10.0.0.0/15",
        "cidr10",
        hyperpod_subnet("cidr10", "10.0.0.0/16", vpc_cidr="10.1.0.0/16"),
        "network.hyperpod_subnet.cidr",
        "10.0.0.0/16 cannot be added to a VPC in 10.0.0.0/8",
    ),
    (
        "172.31.0.0/16 beside a 172.16.0.0/12 VPC",
        "cidr17231",
        hyperpod_subnet("cidr17231", "172.31.0.0/16", vpc_cidr="172.20.0.0/16"),
        "network.hyperpod_subnet.cidr",
        "172.31.0.0/16 cannot be added",
    ),
    (
        "198.19.0.0/16 beside a 10.0.0.0/8 VPC",
        "cidr19819",
        hyperpod_subnet("cidr19819", "198.19.0.0/16"),
        "network.hyperpod_subnet.cidr",
        "198.19.0.0/16 cannot be added",
    ),
    (
        "10.0.0.0/8 block beside a 192.168.0.0/16 VPC",
        "cidr10in192",
        hyperpod_subnet("cidr10in192", "10.1.0.0/16", vpc_cidr="192.168.0.0/20"),
        "network.hyperpod_subnet.cidr",
        "10.0.0.0/8 cannot be added to a VPC in 192.168.0.0/16",
    ),
    (
        "link-local HyperPod subnet",
        "cidrlink",
        hyperpod_subnet("cidrlink", "169.254.0.0/16"),
        "network.hyperpod_subnet.cidr",
        "169.254.0.0/16 is link-local",
    ),
    (
        "AZ name of a Local Zone",
        "azlocal",
        dev_with("azlocal", network={"availability_zones": ["us-west-2a", "us-west-2-lax-1a"]}),
        "network.availability_zones",
        "AZ names of region us-west-2: the region and one letter",
    ),
    (
        "AZ name with two letters",
        "aztwo",
        dev_with("aztwo", network={"availability_zones": ["us-west-2a", "us-west-2ab"]}),
        "network.availability_zones",
        "AZ names of region us-west-2: the region and one letter",
    ),
    (
        "GovCloud AZ id of another region",
        "govazid",
        dev_with(
            "govazid",
            region="us-gov-west-1",
            network={
                "availability_zones": ["us-gov-west-1a", "us-gov-west-1b"],
                "hyperpod_subnet": {"az_id": "usge1-az1", "cidr": "10.1.0.0/16"},
            },
        ),
        "network.hyperpod_subnet.az_id",
        "an AZ id of region us-gov-west-1 (usgw1-az1",
    ),
    (
        "system instance type in a size HyperPod does not offer",
        "sys5x",
        dev_with(
            "sys5x",
            hyperpod={"system_group": {**GROUPS["system_group"], "instance_type": "ml.c5.5xlarge"}},
        ),
        "hyperpod.system_group.instance_type",
        "a HyperPod instance type (ClusterInstanceType",
    ),
    (
        "system instance type of a family HyperPod does not offer",
        "sysc7i",
        dev_with(
            "sysc7i",
            hyperpod={
                "system_group": {**GROUPS["system_group"], "instance_type": "ml.c7i.4xlarge"}
            },
        ),
        "hyperpod.system_group.instance_type",
        "none of family ml.c7i",
    ),
    (
        "cluster ARN of another region",
        "arnregion",
        existing_with(
            "arnregion",
            hyperpod_cluster_arn="arn:aws:sagemaker:us-east-1:111122223333:cluster/abcdef123456",
        ),
        "existing_cluster.hyperpod_cluster_arn",
        "an ARN of the environment's account 111122223333",
    ),
    (
        "cluster ARN of another account",
        "arnaccount",
        existing_with(
            "arnaccount",
            hyperpod_cluster_arn="arn:aws:sagemaker:us-west-2:444455556666:cluster/abcdef123456",
        ),
        "existing_cluster.hyperpod_cluster_arn",
        "an ARN of the environment's account 111122223333",
    ),
    (
        "OIDC provider of another region",
        "oidcregion",
        existing_with(
            "oidcregion",
            oidc_provider_arn="arn:aws:iam::111122223333:oidc-provider/oidc.eks."
            "eu-west-1.amazonaws.com/id/EXAMPLE",
        ),
        "existing_cluster.oidc_provider_arn",
        "for the cluster and the OIDC issuer, its region",
    ),
    (
        "kubectl role of another account",
        "rolacct",
        existing_with("rolacct", kubectl_role_arn="arn:aws:iam::444455556666:role/kubectl"),
        "existing_cluster.kubectl_role_arn",
        "an ARN of the environment's account 111122223333",
    ),
    (
        "replica memory beyond a node's allocatable",
        "bigmem",
        endpoint_with("bigmem", memory_gib=100),
        "kvcache.endpoints.0.memory_gib",
        "at most 83 GiB: one ml.g6e.4xlarge node has 127967 MiB",
    ),
    (
        "replica CPU beyond a node's allocatable",
        "bigcpu",
        endpoint_with("bigcpu", cpu=12),
        "kvcache.endpoints.0.cpu",
        "at most 7 cores: one ml.g6e.4xlarge node has 15890m",
    ),
]


def run_app(
    env: str, config_dir: Path, outdir: Path, monkeypatch: pytest.MonkeyPatch
) -> pytest.ExceptionInfo[SystemExit]:
    monkeypatch.setattr(loader, "CONFIG_DIR", config_dir)
    with pytest.raises(SystemExit) as done:
        app.main(["-c", f"env={env}", "--outdir", str(outdir)])
    return done


@pytest.mark.parametrize(
    ("env", "text", "field", "allowed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_synth_refuses_in_one_line_what_would_fail_at_deploy(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    env: str,
    text: str,
    field: str,
    allowed: str,
) -> None:
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / f"{env}.yaml").write_text(text)
    done = run_app(env, config_dir, tmp_path / "cdk.out", monkeypatch)
    assert done.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: config/{env}.yaml: {field} = "), line
    said, _, fix = line.partition(": allowed: ")[2].partition("; fix: ")
    assert allowed in said and fix, line
    assert not (tmp_path / "cdk.out" / "manifest.json").exists()


@pytest.mark.parametrize(
    ("field", "written", "text"),
    [
        ("eks.kubernetes_version", "1.30", DEV.replace('"1.34"', "1.30")),
        (
            "kvcache.kyverno.chart_version",
            "3.10",
            DEV.replace("kvcache:\n", "kvcache:\n  kyverno:\n    chart_version: 3.10\n", 1),
        ),
    ],
)
def test_an_unquoted_version_is_refused_with_the_value_quoted_as_written(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    field: str,
    written: str,
    text: str,
) -> None:
    """YAML reads 1.30 as the number 1.3: the fix shows the value as the file writes it."""
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "ver.yaml").write_text(text.replace("environment: dev", "environment: ver"))
    done = run_app("ver", config_dir, tmp_path / "cdk.out", monkeypatch)
    assert done.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: config/ver.yaml: {field} = "), line
    assert (
        "quote" in line.partition("; fix: ")[0] and f'"{written}"' in line.partition("; fix: ")[2]
    )


def test_an_environment_name_that_cannot_be_in_a_stack_name_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """CloudFormation stack names are [A-Za-z][A-Za-z0-9-]*: my_env used to reach jsii."""
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "my_env.yaml").write_text(DEV.replace("environment: dev", "environment: my_env"))
    done = run_app("my_env", config_dir, tmp_path / "cdk.out", monkeypatch)
    assert done.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("error: config: env = 'my_env': allowed: 1-32 lower-case letters"), line
    assert "fix: rename config/my_env.yaml to config/my-env.yaml" in line


def _without_silencer() -> dict[str, str]:
    return {
        k: v for k, v in os.environ.items() if k != "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION"
    }


def test_python_app_py_prints_the_error_first_without_the_node_banner() -> None:
    """A new process, as `python app.py` and the CDK CLI (cdk.json's app) start it, with
    nothing in the environment to silence jsii's Node.js end-of-life banner."""
    proc = subprocess.run(
        [sys.executable, "app.py", "-c", "env=my_env"],
        cwd=ROOT,
        env=_without_silencer(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "end-of-life" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: config: env = 'my_env': allowed: "), line


# --- generated: values the generator found loaded or broke the one line, through app.main -------

NUMERIC_FIELDS = [
    "kvcache.endpoints.0.replicas",
    "kvcache.curvine.fuse.memory_limit_mib",
    "hyperpod.gpu_group.threads_per_core",
    "observability.ttft_p95_bound_seconds",
]
REFUSED_VALUES = [True, False, math.inf, -math.inf, math.nan, 2**31, 2**80]
STRAY_KEYS = st.text(min_size=1, max_size=6).filter(
    lambda k: "." not in k and k not in ObservabilityConfig.model_fields
)


@settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(path=st.sampled_from(NUMERIC_FIELDS), value=st.sampled_from(REFUSED_VALUES), key=STRAY_KEYS)
@example(path=NUMERIC_FIELDS[0], value=True, key="\x0b")
def test_synth_refuses_a_boolean_non_finite_or_huge_number_and_a_stray_key_in_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    path: str,
    value: Any,
    key: str,
) -> None:
    config_dir = tmp_path / "config"
    config_dir.mkdir(exist_ok=True)
    for field, written in ((path, value), (f"observability.{key}", 1)):
        raw = with_overrides({field: written})
        raw["environment"] = "gen"
        (config_dir / "gen.yaml").write_text(yaml.safe_dump(raw))
        done = run_app("gen", config_dir, tmp_path / "cdk.out", monkeypatch)
        assert done.value.code == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert line.startswith(f"error: config/gen.yaml: {one_line(field)} = "), line


def test_a_fresh_process_refuses_a_config_it_cannot_decode_in_one_line(tmp_path: Path) -> None:
    """As `python app.py` starts: the loader's folder pointed at a temporary one, then main()."""
    config_dir = tmp_path / "config"
    config_dir.mkdir()
    (config_dir / "utf16.yaml").write_bytes(
        DEV.replace("environment: dev", "environment: utf16").encode("utf-16-le")
    )
    script = (
        "import sys; from pathlib import Path; import app; from infra.config import loader; "
        f"loader.CONFIG_DIR = Path({str(config_dir)!r}); app.main(sys.argv[1:])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, "-c", "env=utf16", "--outdir", str(tmp_path / "out")],
        cwd=ROOT,
        env=_without_silencer(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: config/utf16.yaml: file, line 1 = b'\\x00': allowed: UTF-8"), (
        line
    )


def test_the_cli_refuses_a_non_finite_target_in_one_line(tmp_path: Path) -> None:
    """`hpkv --env` in a fresh process: one error line, exit 2 (a usage error)."""
    raw = copy.deepcopy(BASE)
    raw["environment"] = "inf"
    raw["kvcache"]["endpoints"][0]["autoscaling"] = {"max_replicas": 2, "target": math.inf}
    (tmp_path / "inf.yaml").write_text(yaml.safe_dump(raw))  # target: .inf
    script = (
        "import sys; from pathlib import Path; from infra.config import loader; "
        f"loader.CONFIG_DIR = Path({str(tmp_path)!r}); from scripts.cli import main; "
        "sys.argv = ['hpkv', 'preflight', '--env', 'inf']; main()"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=_without_silencer(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.strip()]
    assert "kvcache.endpoints.0.autoscaling.target = inf" in line and "finite number" in line
    assert "Traceback" not in proc.stderr
