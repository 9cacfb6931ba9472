"""`python app.py -c manifestsDir=<folder>` (what `make synth` passes as dist/<env>) writes the
Kubernetes layer only where `hpkv manifests` would: a folder that holds anything the product did
not write there is refused in one line, exit 2, before the synth, and left byte for byte.

Through the real entry point, ``app.main``, in this process. No double. That the synth writes
its own folder again is shown in tests/k8s/test_no_cdk_tokens.py."""

from __future__ import annotations

from pathlib import Path

import pytest

import app


def test_a_manifests_dir_of_someone_elses_files_is_refused_before_the_synth(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = tmp_path / "gitops"
    repo.mkdir()
    theirs = {"README.md": b"# fleet\n", "kustomization.yaml": b"resources: [apps]\n"}
    for name, content in theirs.items():
        (repo / name).write_bytes(content)
    outdir = tmp_path / "cdk.out"
    with pytest.raises(SystemExit) as done:
        app.main(["-c", "env=dev", "-c", f"manifestsDir={repo}", "--outdir", str(outdir)])
    assert done.value.code == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: -c manifestsDir = {repo}: allowed: a new or empty folder"), line
    assert "kustomization.yaml" in line and "README.md" in line
    assert {p.name: p.read_bytes() for p in repo.iterdir()} == theirs
    assert not (outdir / "manifest.json").exists()  # refused before anything was synthesized
