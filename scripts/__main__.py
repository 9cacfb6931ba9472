"""Entry point: ``python -m scripts <command>`` (the same app as ``hpkv``)."""

import sys

try:
    from scripts.cli import main
except ModuleNotFoundError as missing:  # a Python without the project's requirements
    print(
        f"error: {missing.name} is not installed for {sys.executable}: run `make install`, then "
        "`.venv/bin/hpkv <command>` (or `hpkv <command>` with .venv activated)",
        file=sys.stderr,
    )
    sys.exit(2)  # Exit.USAGE, which cannot be imported without the requirements either

main()
