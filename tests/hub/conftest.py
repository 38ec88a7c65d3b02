"""Fixtures: the local Hub server and a temporary repro project (see tests/hubserver)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hubserver.fixtures import hub, project, tmpfs

__all__ = ["hub", "project", "tmpfs"]
