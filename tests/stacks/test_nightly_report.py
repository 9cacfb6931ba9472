"""The nightly run's proof: after the recreate it runs verify, then bench compare, publishes the
report to the pipeline's artifacts bucket and, when anything failed, says so on the test
environment's alert topic; its role may write that bucket prefix and publish that topic only.

The buildspec's post_build commands run here in bash against a stand-in ``aws`` on PATH that
records its arguments: what CodeBuild would run after a passing and after a failing build
phase. The synthesized template comes from the stack tests' `pipeline` fixture (CDK, cdk-nag on)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from infra.config import load_config
from infra.constructs.pipeline import ALERT_TOPIC, REPORT_BUCKET, REPORT_DIR, REPORT_PREFIX
from tests.support.pipeline import nightly_statements

TOPIC = "arn:aws:sns:us-west-2:111122223333:hyperpod-kvcache-test-kvcache-alerts"


def _project(template: dict[str, Any]) -> dict[str, Any]:
    (project,) = [
        r["Properties"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::CodeBuild::Project"
        and "scripts recreate" in json.dumps(r["Properties"]["Source"].get("BuildSpec", ""))
    ]
    return project


def _phases(template: dict[str, Any]) -> dict[str, list[str]]:
    spec = json.loads(_project(template)["Source"]["BuildSpec"])
    return {name: phase["commands"] for name, phase in spec["phases"].items()}


def _artifacts_bucket(template: dict[str, Any]) -> str:
    (store,) = [
        r["Properties"]["ArtifactStore"]
        for r in template["Resources"].values()
        if r["Type"] == "AWS::CodePipeline::Pipeline"
    ]
    logical: str = store["Location"]["Ref"]
    return logical


def test_the_nightly_run_recreates_then_verifies_then_compares_the_tiers(
    pipeline: dict[str, Any],
) -> None:
    build = _phases(pipeline["template"])["build"]
    runs = [c for c in build if "-m scripts" in c]
    assert [c.split("-m scripts ")[1].split(" --")[0] for c in runs] == [
        "recreate",
        "verify",
        "bench compare",
    ]
    assert "--skip-verify" in runs[0] and "--wait-minutes" in runs[1]
    assert f"--env test --out {REPORT_DIR}" in runs[2]
    # CodeBuild stops the phase at the first failing command: nothing masks an exit code.
    assert not any("||" in c for c in build[2:])


def test_the_nightly_role_writes_only_the_report_prefix_and_publishes_only_the_alert_topic(
    pipeline: dict[str, Any],
) -> None:
    template = pipeline["template"]
    by_sid = nightly_statements(template)
    put = by_sid["PublishNightlyReport"]
    assert put["Action"] == "s3:PutObject"
    bucket = _artifacts_bucket(template)
    assert put["Resource"] == {
        "Fn::Join": ["", [{"Fn::GetAtt": [bucket, "Arn"]}, f"/{REPORT_PREFIX}/*"]]
    }
    encrypt = by_sid["EncryptNightlyReport"]
    assert encrypt["Action"] == "kms:GenerateDataKey"
    key = template["Resources"][bucket]["Properties"]["BucketEncryption"]
    key_ref = key["ServerSideEncryptionConfiguration"][0]["ServerSideEncryptionByDefault"]
    assert encrypt["Resource"] == key_ref["KMSMasterKeyID"]
    assert by_sid["NotifyNightlyFailure"]["Resource"] == TOPIC
    via = by_sid["NotifyThroughTopicKey"]["Condition"]["StringEquals"]
    assert via == {
        "kms:ViaService": "sns.us-west-2.amazonaws.com",
        "kms:EncryptionContext:aws:sns:topicArn": TOPIC,
    }
    writes = [s for s in by_sid.values() if "s3:Put" in json.dumps(s["Action"])]
    assert writes == [put]
    env = {v["Name"]: v["Value"] for v in _project(template)["Environment"]["EnvironmentVariables"]}
    assert env[REPORT_BUCKET] == {"Ref": bucket} and env[ALERT_TOPIC] == TOPIC
    assert load_config("test").observability.enabled  # the topic exists in the test environment


def _post_build(
    template: dict[str, Any], tmp_path: Path, succeeding: str, report: bool = True
) -> list[list[str]]:
    """Run the post_build commands as CodeBuild would; the ``aws`` calls they made."""
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls.jsonl"
    bin_dir.mkdir()
    fake_aws = bin_dir / "aws"
    fake_aws.write_text(
        "#!/usr/bin/env python3\nimport json, sys\n"
        f"open({str(calls)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
    )
    fake_aws.chmod(0o755)
    if report:
        (tmp_path / REPORT_DIR).mkdir(parents=True)
        (tmp_path / REPORT_DIR / "report.md").write_text("# report\n")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        REPORT_BUCKET: "artifacts",
        ALERT_TOPIC: TOPIC,
        "CODEBUILD_BUILD_NUMBER": "42",
        "CODEBUILD_BUILD_SUCCEEDING": succeeding,
        "CODEBUILD_BUILD_URL": "https://console.example/build/42",
    }
    for command in _phases(template)["post_build"]:
        subprocess.run(["bash", "-ec", command], cwd=tmp_path, env=env, check=True)
    if not calls.exists():
        return []
    return [json.loads(line) for line in calls.read_text().splitlines()]


@pytest.mark.parametrize("succeeding", ["1", "0"])
def test_the_report_is_published_after_every_run_and_a_failed_one_notifies(
    pipeline: dict[str, Any],
    tmp_path: Path,
    succeeding: str,
) -> None:
    calls = _post_build(pipeline["template"], tmp_path, succeeding)
    assert calls[0] == [
        "s3",
        "cp",
        "--recursive",
        "--only-show-errors",
        REPORT_DIR,
        f"s3://artifacts/{REPORT_PREFIX}/42/",
    ]
    notices = [c for c in calls if c[:2] == ["sns", "publish"]]
    if succeeding == "1":
        assert notices == []
        return
    (notice,) = notices
    assert notice[notice.index("--topic-arn") + 1] == TOPIC
    message = notice[notice.index("--message") + 1]
    assert f"s3://artifacts/{REPORT_PREFIX}/42/report.md" in message
    assert "https://console.example/build/42" in message


def test_a_run_that_failed_before_bench_compare_still_notifies(
    pipeline: dict[str, Any],
    tmp_path: Path,
) -> None:
    calls = _post_build(pipeline["template"], tmp_path, "0", report=False)
    assert [c[:2] for c in calls] == [["sns", "publish"]]
