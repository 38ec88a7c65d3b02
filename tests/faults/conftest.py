"""Fixtures the fault tests share with other stages' tests."""

from tests.export.conftest import project  # noqa: F401  (a project copy with locks)
