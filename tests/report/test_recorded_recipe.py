"""recipe.json is read leniently: a `--url` target, an older recipe and a full one all load."""

from __future__ import annotations

from pathlib import Path

from repro.runfolder import RunFolder
from repro.schema.recordedrecipe import RecordedRecipe

FIXTURE = Path(__file__).parents[1] / "fixtures" / "h200-sglang-0.5.23" / "bench-generate"


def test_a_url_target_has_no_model_drafter_or_gpus() -> None:
    target = RunFolder(FIXTURE).read_recipe()
    assert target.url == "http://127.0.0.1:30000" and target.bench is not None
    assert (target.model_ref, target.drafter_ref, target.gpus, target.algorithm) == (
        "?@?", "none", 0, None,
    )  # fmt: skip


def test_a_full_recipe_reads_as_attributes_and_keeps_the_rest() -> None:
    recipe = RecordedRecipe.model_validate(
        {
            "name": "r", "model": {"repo": "org/m", "revision": "abc", "trust_remote_code": False},
            "drafter": {"repo": "org/d"}, "speculative": {"algorithm": "EAGLE3"},
            "parallelism": {"tp": 8, "ep": 1}, "topology": {"gpus": 8}, "later": {"x": 1},
        }
    )  # fmt: skip
    assert (recipe.model_ref, recipe.drafter_ref) == ("org/m@abc", "org/d@?")
    assert (recipe.gpus, recipe.algorithm, recipe.parallelism["tp"]) == (8, "EAGLE3", 8)
    assert recipe.model_dump(mode="json", exclude_unset=True)["later"] == {"x": 1}
