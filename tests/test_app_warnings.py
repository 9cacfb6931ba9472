"""`python app.py` (make synth) prints the assembly's warnings on stderr; under the CLI it does not.

Before, a warning such as "HyperPod dependencies chart not found" only reached the manifest's
metadata, which nobody running `make synth` reads.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from aws_cdk import Annotations, Stack, cx_api

from app import report, synth_messages
from infra.cdk.context import new_app


def assembly_with_warning(outdir: Path) -> cx_api.CloudAssembly:
    app = new_app(str(outdir))  # as app.py makes it: the warnings-only validator off
    stack = Stack(app, "demo")
    Annotations.of(stack).add_warning_v2("demo:chart-missing", "chart not found; run make chart")
    Annotations.of(stack).add_warning_v2("demo:acknowledged", "nobody needs to see this")
    Annotations.of(stack).acknowledge_warning("demo:acknowledged", "covered elsewhere")
    Annotations.of(stack).add_info("an info line")
    return app.synth()


def test_direct_synth_prints_unacknowledged_warnings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CDK_OUTDIR", raising=False)
    assembly = assembly_with_warning(tmp_path)
    assert synth_messages(assembly) == [
        "warning: demo: chart not found; run make chart [ack: demo:chart-missing]"
    ]
    stream = io.StringIO()
    report(assembly, stream)
    assert stream.getvalue() == synth_messages(assembly)[0] + "\n"


def test_cli_synth_leaves_printing_to_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CDK_OUTDIR", str(tmp_path))
    stream = io.StringIO()
    report(assembly_with_warning(tmp_path), stream)
    assert stream.getvalue() == ""
