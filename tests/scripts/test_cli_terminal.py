"""What only a real process shows: the CLI's entry point (``python -m scripts``, what ``hpkv``
runs) with standard input and output closed and no terminal at all (a new session), and at a
question answered with Ctrl-D on a real pseudo-terminal; and, in this process, a FIFO given where
a file is read or written (which would wait for the other end forever: a watchdog releases it and
fails the test).

No double: each process is a new Python process in a new user's environment (no AWS credentials,
no kubeconfig); the question is asked on a pty from the standard library.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from scripts.cli import app

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 60


def _env(home: Path) -> dict[str, str]:
    kept = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "KUBE", "TERM"))}
    return {
        **kept,
        "PYTHONPATH": str(ROOT),
        "HOME": str(home),
        "KUBECONFIG": str(home / "none"),
        "AWS_CONFIG_FILE": str(home / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def _run(argv: list[str], home: Path, **how: Any) -> subprocess.CompletedProcess[str]:
    """``python <argv>`` as a new user, from the repository (``cwd`` in ``how`` to change it)."""
    where = {"cwd": ROOT, **how}
    return subprocess.run(
        [sys.executable, *argv], env=_env(home), text=True, timeout=TIMEOUT_S, check=False, **where
    )


def _close_stdin_and_stdout() -> None:
    os.close(0)
    os.close(1)


def test_verify_chaos_without_a_terminal_or_standard_input_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """`sys.stdin` is None in a process started with fd 0 closed (a cron job, `<&-`): asking it
    whether it is a terminal used to end in an AttributeError traceback. Here also standard
    output is closed, TERM unset and the process has no controlling terminal."""
    how = {"preexec_fn": _close_stdin_and_stdout, "start_new_session": True}
    proc = _run(["-m", "scripts", "verify", "--chaos"], tmp_path, stderr=subprocess.PIPE, **how)
    assert proc.returncode == 3, proc.stderr
    (line,) = proc.stderr.splitlines()
    assert line.startswith("error: refused: verify --chaos deletes an endpoint Pod") and (
        line.endswith("pass --yes to run it")
    )


def _read_until(fd: int, text: bytes, deadline: float) -> bytes:
    seen = b""
    while text not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the other end closed
                break
    return seen


def test_ctrl_d_at_the_chaos_question_is_a_no_not_a_failed_check(tmp_path: Path) -> None:
    """End of input at the question used to end like a failed check (exit 1, "Aborted!"):
    it is the same answer as "n", exit 3 (refused), nothing deleted."""
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "scripts", "verify", "--chaos"],
        cwd=ROOT,
        env=_env(tmp_path),
        stdin=terminal,
        stdout=subprocess.PIPE,
        stderr=terminal,
        start_new_session=True,
    )
    os.close(terminal)
    try:
        asked = _read_until(controller, b"Go on? [y/N]:", time.monotonic() + TIMEOUT_S)
        assert b"Go on? [y/N]:" in asked, asked
        os.write(controller, b"\x04")  # Ctrl-D at the start of a line: end of input
        code = proc.wait(timeout=TIMEOUT_S)
        said = _read_until(controller, b"nothing was deleted", time.monotonic() + 10)
    finally:
        proc.kill()
        os.close(controller)
        assert proc.stdout is not None
        proc.stdout.close()
    assert code == 3
    lines = [ln.strip() for ln in said.decode().splitlines() if ln.strip()]
    assert lines == ["error: refused: --chaos not confirmed; nothing was deleted"], said


WAIT_S = 30


def _release(fifo: Path) -> None:
    """Open both ends of ``fifo`` and close them: a reader or writer waiting on it returns."""
    os.close(os.open(fifo, os.O_RDWR | os.O_NONBLOCK))


def _invoke_watched(argv: list[str], fifo: Path) -> Any:
    """The command in a thread: one that waits on the FIFO is released and the test fails."""
    done: dict[str, Any] = {}
    worker = threading.Thread(
        target=lambda: done.update(result=CliRunner().invoke(app, argv)), daemon=True
    )
    worker.start()
    worker.join(WAIT_S)
    if worker.is_alive():
        _release(fifo)
        worker.join(WAIT_S)
        pytest.fail(f"{argv} opened the FIFO {fifo} and waited on it")
    return done["result"]


@pytest.mark.parametrize("option", ["--samples", "MODEL", "--out", "--png"])
def test_a_fifo_where_a_file_is_read_or_written_is_refused_without_opening_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    monkeypatch.chdir(tmp_path)
    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    samples = str(ROOT / "tests" / "scripts" / "fixtures" / "observability_samples.json")
    argv = {
        "--samples": ["dashboard", "--out", "d", "--samples", str(fifo), "--png", "p.png"],
        "MODEL": ["size", str(fifo)],
        "--out": ["manifests", "--out", str(fifo)],
        "--png": ["dashboard", "--out", "d", "--samples", samples, "--png", str(fifo)],
    }[option]
    result = _invoke_watched(argv, fifo)
    assert result.exit_code == 2, result.output
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {option} = {fifo}: allowed: "), line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe.png"]
