"""checkov-skips.yaml: every accepted finding has a check id and a reason, and the runner lets
through only what an entry covers. checkov itself runs in `make lint` (its own virtualenv, where
the runner also refuses ids checkov does not know); these tests need no checkov."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tools.run_checkov import (
    Skip,
    SkipFileError,
    failed_checks,
    load_skips,
    main,
    unaccepted,
    unknown_ids,
    unused,
)


def finding(check_id: str, resource: str) -> dict[str, Any]:
    return {"check_id": check_id, "resource": resource, "file_path": "/x", "check_name": "n"}


def test_every_skip_has_an_id_and_a_reason() -> None:
    skips = load_skips()
    assert len(skips) > 10
    assert len({(s.id, s.resources) for s in skips}) == len(skips), "duplicate entries"


def test_privilege_is_accepted_only_for_the_csi_node_plugin() -> None:
    skips = load_skips()
    assert not unaccepted([finding("CKV_K8S_16", "DaemonSet.curvine.curvine-csi-node")], skips)
    left = unaccepted([finding("CKV_K8S_16", "DaemonSet.curvine.curvine-worker")], skips)
    assert left, "a privileged Curvine worker must be a finding, not accepted"


def test_findings_not_covered_are_left() -> None:
    skips = [
        Skip(
            "CKV_AWS_18",
            "the access-log buckets: logging them to themselves loops",
            ("AWS::S3::Bucket.*AccessLogs*",),
        )
    ]
    report = [
        {
            "results": {
                "failed_checks": [
                    finding("CKV_AWS_18", "AWS::S3::Bucket.TlsAccessLogsAB12"),
                    finding("CKV_AWS_18", "AWS::S3::Bucket.DataBucketCD34"),
                    finding("CKV_AWS_21", "AWS::S3::Bucket.TlsAccessLogsAB12"),
                ]
            }
        }
    ]
    left = unaccepted(failed_checks(report), skips)
    assert [(f["check_id"], f["resource"]) for f in left] == [
        ("CKV_AWS_18", "AWS::S3::Bucket.DataBucketCD34"),
        ("CKV_AWS_21", "AWS::S3::Bucket.TlsAccessLogsAB12"),
    ]


def test_an_entry_no_finding_needs_is_reported_as_unused() -> None:
    logs = Skip(
        "CKV_AWS_18",
        "the access-log buckets: logging them to themselves loops",
        ("AWS::S3::Bucket.*AccessLogs*",),
    )
    lambdas = Skip("CKV_AWS_115", "handlers run only during a deploy, no reserved concurrency")
    findings = [
        finding("CKV_AWS_18", "AWS::S3::Bucket.TlsAccessLogsAB12"),
        finding("CKV_AWS_18", "AWS::S3::Bucket.DataBucketCD34"),
    ]
    assert unused([logs, lambdas], findings) == [lambdas]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("- {id: CKV_AWS_18}", "give the reason"),
        ("- {id: CKV_AWS_18, reason: because}", "give the reason"),
        ("- {id: AWS_18, reason: a reason long enough to count}", "checkov check id"),
        ("- {id: CKV_AWS_18, reason: a reason long enough to count, resources: x}", "list"),
    ],
)
def test_a_malformed_entry_is_one_line(tmp_path: Path, entry: str, message: str) -> None:
    path = tmp_path / "skips.yaml"
    path.write_text(f"skips:\n{entry}\n")
    with pytest.raises(SkipFileError, match=message):
        load_skips(path)


def test_ids_checkov_does_not_know_are_named() -> None:
    skips = [Skip("CKV_AWS_18", "x" * 20), Skip("CKV_AWS_99999", "y" * 20)]
    assert unknown_ids(skips, {"CKV_AWS_18", "CKV_AWS_21"}) == ["CKV_AWS_99999"]


def test_a_missing_manifests_folder_is_one_line_before_checkov_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`make synth` leaves dist/<env> unwritten for an FSx L2 before the first deploy."""
    missing = tmp_path / "dist" / "dev"
    assert main(["--checkov", str(tmp_path / "no-checkov"), "--k8s", str(missing)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert str(missing) in line and "make manifests" in line
