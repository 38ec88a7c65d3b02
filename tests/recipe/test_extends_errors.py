"""A refusal through `extends:` names the file the user wrote, with its lines, and the parent
only as context; the DP LM head is a recipe field, rendered into SGLang's argv, that meets
what SGLang 0.5.23's DFLASH hook asks for with DP attention."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.errors import RecipeError
from repro.recipe import load_recipe
from repro.recipe.images import catalog_for_recipe
from repro.recipe.render import render_server_argv

from .conftest import Project

CHILD = """extends: kimi26-ep4-dflash
description: the users' EP4 DFlash with DP attention
parallelism:
  dp: 4
  dp_attention: true
"""


def _check(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["recipe", "check", *args])
    return result.exit_code, result.output


def test_the_dp_lm_head_field_renders_its_option(project: Project) -> None:
    project.recipe("child", CHILD + "  dp_lm_head: true\n")
    recipe = load_recipe("child")
    argv = render_server_argv(recipe, catalog_for_recipe(recipe))
    assert argv[argv.index("--attn-dp-size") + 1] == "4"
    assert "--enable-dp-lm-head" in argv
    plain = load_recipe("kimi26-ep4-dflash")
    assert "--enable-dp-lm-head" not in render_server_argv(plain, catalog_for_recipe(plain))


def test_the_option_belongs_to_the_field_not_extra_args(project: Project) -> None:
    project.recipe("extra", CHILD + "server: {extra_args: [--enable-dp-lm-head]}\n")
    recipe = load_recipe("extra")
    with pytest.raises(RecipeError) as caught:
        render_server_argv(recipe, catalog_for_recipe(recipe))
    assert "'--enable-dp-lm-head' belongs to parallelism.dp_lm_head" in caught.value.message


@pytest.mark.real_sglang
def test_sglangs_refusal_through_extends_names_the_childs_file_and_lines(
    project: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # the twins: never the user's
    project.recipe("child", CHILD)
    code, out = _check("--json", "child")
    assert code == 1, out
    [result] = json.loads(out)
    [refusal] = [f for f in result["findings"] if f["rule"] == "engine-dry-start"]
    # the file the user edited, never the parent they did not touch
    assert refusal["file"] == "recipes/child.yaml", refusal
    message = refusal["message"]
    assert "DFLASH with dp attention requires --enable-dp-lm-head" in message
    assert "comes from recipes/kimi26-ep4-dflash.yaml (line " in message  # the context
    assert "(extends:, line 1)" in message
    assert "this file sets parallelism.dp (line 4), parallelism.dp_attention (line 5)" in message
    assert "parallelism.dp_lm_head renders --enable-dp-lm-head" in message  # what to set

    project.recipe("fixed", CHILD + "  dp_lm_head: true\n")
    code, out = _check("--json", "fixed")
    [fixed] = json.loads(out)
    assert fixed["ok"], fixed["findings"]
    assert "sglang_version" in fixed["engine"]  # SGLang's own start-up ran and passed
