"""The teardown world (tests/scripts/lib/teardown/world.py) for this folder's tests."""

from tests.scripts.lib.teardown.world import world  # noqa: F401  (a fixture)
