"""A CLI override is held to the bounds of the recipe field it overrides: an absurd
`--concurrency`, `--output-len` or prompt count is refused before anything starts, never run
and then refused by `--resume`."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.recipe.yamlio import read_mapping
from repro.schema.recipe import Recipe

OVER = [
    (["bench", "demo", "--concurrency", "99999999999999999999"], "between 1 and 100000"),
    (["bench", "demo", "--concurrency", "1,100001"], "between 1 and 100000"),
    (["bench", "demo", "--output-len", "1000000000"], "1<=x<=10000000"),
    (["bench", "demo", "--input-len", "10000001"], "1<=x<=10000000"),
    (["bench", "demo", "--prompts", "1000001"], "1<=x<=1000000"),
    (["accept", "demo", "-n", "100001"], "1<=x<=100000"),
    (["accept", "demo", "--max-new-tokens", "1000001"], "1<=x<=1000000"),
    (["accept", "demo", "--concurrency", "100001"], "1<=x<=100000"),
]


@pytest.mark.parametrize(("args", "words"), OVER, ids=lambda x: " ".join(x))
def test_an_override_beyond_the_recipes_bound_is_refused(
    args: list[str], words: str, tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("REPRO_RECIPES_DIR", str(repo_root / "recipes"))
    result = CliRunner().invoke(main, [*args, "--url", "http://127.0.0.1:9"])
    assert result.exit_code in (1, 2), result.output
    assert words in result.output, result.output
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("field", "value"), [("output_len", 1_000_000_000), ("prompts_per_level", 1_000_001)]
)
def test_the_recipe_refuses_the_same_values(
    field: str, value: int, tmp_path: Path, repo_root: Path
) -> None:
    data = read_mapping(repo_root / "recipes" / "demo.yaml").data
    data["bench"][field] = value
    with pytest.raises(ValueError, match="less than or equal"):
        Recipe.model_validate(data)
