"""`repro image export` onto a full disk: one error line, no partial file left."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.errors import ReproError
from repro.image.registry import export_archive
from tests.hubserver.fixtures import tmpfs

__all__ = ["tmpfs"]

pytestmark = pytest.mark.docker


def test_export_to_a_full_disk_is_one_line(sim_image: str, tmpfs: Path) -> None:
    output = tmpfs / "sim.tar"
    with pytest.raises(ReproError) as err:
        export_archive(sim_image, output)
    assert str(output) in err.value.message and "\n" not in err.value.message
    assert list(tmpfs.iterdir()) == []  # neither the archive nor its .partial
