"""Shared test set-up.

Tests marked `docker` use the real engine that `make test` installs and starts; they fail
(not skip) when it is missing, so CI can never pass without running them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# testcontainers' Ryuk reaper pulls its own image from a registry CI cannot reach.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = REPO_ROOT.parent / "shared" / "fixtures"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    return FIXTURES
