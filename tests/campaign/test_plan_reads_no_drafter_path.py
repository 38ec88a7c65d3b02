"""Planning never reads a path the recipe chose: a DFlash point whose draft tokens are not
known from the recipe, a locked config.json or an assumed block size is refused, rather than
letting the simulator's argument resolution read the drafter's folder (a FIFO there hung)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from repro.campaign.predict import predict_point
from repro.errors import ReproError
from tests.recipe.conftest import Project


def test_a_point_with_unknown_draft_tokens_is_refused_without_reading_the_drafter(
    engine_project: Project, tmp_path: Path
) -> None:
    drafter = engine_project.root / "evil" / "drafter"
    drafter.mkdir(parents=True)
    os.mkfifo(drafter / "config.json")  # read, it would hang the plan
    path = engine_project.recipe(
        "pr",
        "extends: kimi26-ep4-dflash\nmodel: {repo: org/unknown}\ndrafter: {repo: evil/drafter}\n",
    )
    with pytest.raises(ReproError, match="draft tokens per step are unknown"):
        predict_point(path, tmp_path / "work", on="kimi26-ep4-rtx6000")
