"""Exponent numbers without a dot (`1e308`) are numbers, as YAML 1.2 and JSON read them, not
the strings YAML 1.1 makes of them; out-of-range values are then refused with a reason."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from repro.cli import main
from repro.recipe.yamlio import read_mapping


def test_exponents_are_numbers_and_quoted_ones_stay_strings(tmp_path: Path) -> None:
    path = tmp_path / "numbers.yaml"
    path.write_text('a: 1e308\nb: 5E-3\nc: -2.5e+3\nd: "1e5"\ne: 1e\n')
    assert read_mapping(path).data == {"a": 1e308, "b": 0.005, "c": -2500.0, "d": "1e5", "e": "1e"}


def test_weights_gb_1e308_is_refused_as_too_large(repo_root: Path, tmp_path: Path) -> None:
    (tmp_path / "images").symlink_to(repo_root / "images")
    (tmp_path / "recipes").mkdir()
    text = (repo_root / "recipes" / "kimi26-tp8.yaml").read_text()
    assert "  weights_gb: 595\n" in text
    recipe = tmp_path / "recipes" / "big.yaml"
    recipe.write_text(text.replace("  weights_gb: 595\n", "  weights_gb: 1e308\n"))
    result = CliRunner().invoke(main, ["recipe", "check", "--no-engine", str(recipe)])
    assert result.exit_code == 1 and "model.weights_gb: expected a value <=" in result.output
