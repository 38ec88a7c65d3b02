"""Fixtures: the local Hub server (see tests/hubserver)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hubserver.fixtures import hub

__all__ = ["hub"]
