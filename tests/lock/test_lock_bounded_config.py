"""A config.json larger than any model's is refused from the Hub's file listing, before it is
downloaded or read (hostile round four: a 1 GB config.json took a check to 2.6 GB)."""

from __future__ import annotations

import json

import pytest

from hubserver.fixtures import Project, model_files
from hubserver.repos import HubFile
from repro.hub.errors import HubError
from repro.hub.resolve import MAX_CONFIG_BYTES


def test_a_config_json_past_the_bound_is_refused_without_downloading_it(
    project: Project,
) -> None:
    padding = " " * (MAX_CONFIG_BYTES + 1)
    huge = HubFile("config.json", (json.dumps({"architectures": ["X"]}) + padding).encode())
    project.hub.add_repo("org/big", [huge, *(f for f in model_files() if f.path != "config.json")])
    recipe = project.root / "recipes" / "small.yaml"
    recipe.write_text(recipe.read_text().replace("org/model", "org/big"))
    project.hub.log.clear()
    with pytest.raises(HubError) as refused:
        project.lock()
    assert "config.json is" in refused.value.message and "not read" in refused.value.message
    assert project.hub.downloads("config.json") == []
    assert not project.lock_path().exists()
