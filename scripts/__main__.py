"""Entry point: ``python -m scripts <command>``."""

from scripts.cli import main

main()
