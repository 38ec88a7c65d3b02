"""Loading: names, paths, locks, `extends` merge semantics, and one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.errors import RecipeError, ReproError
from repro.recipe import load_recipe
from repro.recipe.loader import load_recipe_document, merge

from .conftest import BASE_RECIPE, Project


def error_of(ref: str | Path, **kwargs: Path) -> RecipeError:
    with pytest.raises(RecipeError) as info:
        load_recipe(ref, **kwargs)
    assert isinstance(info.value, ReproError)
    return info.value


# --- finding the file -----------------------------------------------------------------------
def test_name_path_and_env_dir(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    by_name = load_recipe("kimi26-ep4")
    by_path = load_recipe("recipes/kimi26-ep4.yaml")
    by_pathobj = load_recipe(project.recipes / "kimi26-ep4.yaml")
    assert load_recipe("kimi26-ep4.yaml").resolved() == by_name.resolved()
    assert by_name.resolved() == by_path.resolved() == by_pathobj.resolved()
    assert by_name.source_path == project.recipes / "kimi26-ep4.yaml"
    elsewhere = project.root / "elsewhere"
    (project.recipes).rename(elsewhere)
    monkeypatch.setenv("REPRO_RECIPES_DIR", str(elsewhere))
    assert load_recipe("kimi26-ep4").resolved() == by_name.resolved()
    assert load_recipe("kimi26-ep4", recipes_dir=elsewhere).resolved() == by_name.resolved()


def test_unknown_name_suggests(project: Project) -> None:
    err = error_of("kimi26-ep44")
    assert "no recipe named 'kimi26-ep44'" in err.message
    assert "did you mean 'kimi26-ep4'" in err.message


def test_missing_path(project: Project) -> None:
    assert "no such recipe or lock file" in error_of("recipes/nope.yaml").message


def test_missing_recipes_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("REPRO_RECIPES_DIR", raising=False)
    err = error_of("demo")
    assert err.hint and "REPRO_RECIPES_DIR" in err.hint


# --- extends --------------------------------------------------------------------------------
def test_merge_semantics() -> None:
    parent = {"a": {"x": 1, "y": [1, 2, 3], "z": {"k": 1}}, "b": [1], "c": {"d": 1}}
    child = {"a": {"y": [9], "z": {"j": 2, "k": None}}, "b": [2, 3], "c": None, "e": None}
    assert merge(parent, child) == {
        "a": {"x": 1, "y": [9], "z": {"j": 2}},  # null removes an inherited key
        "b": [2, 3],
        "e": None,  # and stays where there is nothing to remove (validation names it)
    }
    assert parent["a"]["z"] == {"k": 1}  # inputs untouched


def test_extends_lists_replace_mappings_merge(project: Project) -> None:
    r = load_recipe("kimi26-ep4-dflash")
    assert r.parallelism.tp == 8 and r.parallelism.ep == 4  # ep4 over tp8
    assert r.server.tool_call_parser == "kimi_k2"  # from the root, merged
    assert r.drafter is not None and r.drafter.repo == "z-lab/Kimi-K2.6-DFlash"
    assert [p.name for p in r.chain] == [
        "kimi26-ep4-dflash.yaml",
        "kimi26-ep4.yaml",
        "kimi26-tp8.yaml",
    ]
    project.recipe("short", "extends: kimi26-tp8\nbench: {concurrencies: [3]}\n")
    short = load_recipe("short")
    assert short.bench.concurrencies == [3]  # the list replaced, not appended
    assert short.bench.input_len == 1024  # the mapping merged


def test_name_and_description_are_not_inherited(project: Project) -> None:
    project.recipe("child", "extends: kimi26-tp8\n")
    child = load_recipe("child")
    assert child.name == "child"
    assert child.description == ""
    assert child.extends == "kimi26-tp8"
    assert child.resolved()["extends"] is None


def test_null_removes_a_parent_section(project: Project) -> None:
    project.recipe(
        "nodraft", "extends: kimi26-ep4-dflash\ndrafter: null\nspeculative: null\naccept: null\n"
    )
    r = load_recipe("nodraft")
    assert r.drafter is None and r.speculative is None


def test_extends_by_relative_path(project: Project) -> None:
    project.write("sub/child.yaml", "extends: ../recipes/kimi26-tp8.yaml\n", folder=".")
    assert load_recipe("sub/child.yaml").model.repo == "moonshotai/Kimi-K2.6"


def test_extends_cycle(project: Project) -> None:
    project.recipe("a", "extends: b\n")
    project.recipe("b", "extends: c\n")
    project.recipe("c", "extends: a\n")
    err = error_of("a")
    assert (
        err.message == "recipes/c.yaml: extends: cycle "
        "recipes/a.yaml -> recipes/b.yaml -> recipes/c.yaml -> recipes/a.yaml"
    )


def test_extends_itself(project: Project) -> None:
    project.recipe("me", "extends: me\n")
    assert "cycle" in error_of("me").message


def test_missing_parent(project: Project) -> None:
    project.recipe("orphan", "extends: kimi26-ep5\n")
    err = error_of("orphan")
    assert err.message.startswith("recipes/orphan.yaml: extends: no parent recipe 'kimi26-ep5'")
    assert "did you mean" in err.message


@pytest.mark.parametrize("value", ["3", "[a]", "{a: 1}", "''"])
def test_extends_must_be_a_name(project: Project, value: str) -> None:
    project.recipe("bad", f"extends: {value}\n")
    assert "extends:" in error_of("bad").message


# --- validation messages --------------------------------------------------------------------
def test_unknown_key_did_you_mean(project: Project) -> None:
    project.recipe("typo", BASE_RECIPE + "servr: {port: 1}\n")
    err = error_of("typo")
    assert (
        err.message
        == "recipes/typo.yaml: servr: unknown key 'servr' (did you mean 'server'?) (line 6)"
    )


def test_nested_unknown_key_and_misplaced_key(project: Project) -> None:
    project.recipe("typo", BASE_RECIPE.replace("{tp: 8}", "{tp: 8, pipline: 2}") + "tp: 8\n")
    lines = error_of("typo").problems
    assert any("parallelism.pipline: unknown key 'pipline'" in line for line in lines)
    assert any("tp: unknown key 'tp' (it belongs at parallelism.tp)" in line for line in lines)


def test_wrong_type_names_file_field_and_expectation(project: Project) -> None:
    project.recipe("t", BASE_RECIPE.replace("{tp: 8}", '{tp: "8"}'))
    assert (
        error_of("t").message
        == "recipes/t.yaml: parallelism.tp: expected an integer, got '8' (line 3)"
    )


def test_missing_required_field(project: Project) -> None:
    project.recipe("m", BASE_RECIPE.replace("model: {repo: org/model, revision: main}\n", ""))
    assert error_of("m").message == "recipes/m.yaml: model: required field is missing"


def test_error_in_parent_names_parent_file(project: Project) -> None:
    project.recipe("p", BASE_RECIPE.replace("{tp: 8}", "{tp: 0}"))
    project.recipe("c", "extends: p\n")
    assert error_of("c").message.startswith("recipes/p.yaml: parallelism.tp: expected a value >= 1")


def test_several_problems_one_line_each(project: Project) -> None:
    project.recipe("many", "image: Bad Name\nmodel: {repo: nope}\ntopology: {gpus: -1}\n")
    err = error_of("many")
    assert len(err.problems) == 3
    assert err.message.startswith("3 problems:")
    for line in err.problems:
        assert line.startswith("recipes/many.yaml: ")


def test_secret_in_env_is_refused(project: Project) -> None:
    project.recipe("s", BASE_RECIPE + "env: {HF_TOKEN: hf_abc}\n")
    assert "HF_TOKEN is a secret" in error_of("s").message
    project.recipe("s", BASE_RECIPE + "env: {SOMETHING: hf_" + "a" * 34 + "}\n")
    assert "looks like a Hugging Face token" in error_of("s").message


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b"\xff\xfe\x00bad", "not UTF-8 text: byte 0xff at line 1"),
        (b"image: [1\n", "invalid YAML at line 2"),
        (b"- a\n- b\n", "the top level is a list, expected a mapping"),
        (b"just text\n", "the top level is a str"),
        (b"", "the file is empty"),
        (b"image: a\nimage: b\n", "image: duplicate key (line 2)"),
        (b"1: a\n", "key 1 is not a string"),
        (b"a: &x [*x]\n", "refers to itself"),
        (b"a: 2024-13-45\n", "invalid YAML value"),
        (b"a: \x00\n", "NUL byte at line 1"),
        (b"\t- x\n", "invalid YAML"),
        (
            b"a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            b"b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
            b"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
            b"e: [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n",
            "more than 100000 values",
        ),
    ],
)
def test_bad_files_give_one_clean_error(project: Project, content: bytes, expected: str) -> None:
    (project.recipes / "bad.yaml").write_bytes(content)
    err = error_of("bad")
    assert err.message.startswith("recipes/bad.yaml: ")
    assert expected in err.message


def test_a_directory_is_not_a_recipe(project: Project) -> None:
    (project.recipes / "dir.yaml").mkdir()
    assert "no recipe named" in error_of("dir").message or "directory" in error_of("dir").message


# --- locks ----------------------------------------------------------------------------------
def test_lock_file_holds_the_resolved_recipe(project: Project) -> None:
    original = load_recipe("kimi26-ep4-dflash")
    lock = {"lock_version": 1, "recipe": original.resolved(), "catalog": None, "other": {"x": 1}}
    path = project.write("locks/kimi26-ep4-dflash.lock.json", json.dumps(lock), folder=".")
    again, document = load_recipe_document(path)
    assert again.resolved() == original.resolved()
    assert again.extends is None
    assert document is not None and document["other"] == {"x": 1}
    assert again.source_path == path
    assert load_recipe("locks/kimi26-ep4-dflash.lock.json").resolved() == again.resolved()


def test_yaml_lock_file(project: Project) -> None:
    import yaml

    data = {"lock_version": 1, "recipe": load_recipe("demo").resolved()}
    path = project.write("demo.lock.yaml", yaml.safe_dump(data), folder="locks")
    assert load_recipe(path).resolved() == load_recipe("demo").resolved()
    project.recipe("notalock", BASE_RECIPE + "recipe: {a: 1}\n")
    assert "unknown key 'recipe'" in error_of("notalock").message


def test_lock_errors_name_the_recipe_key(project: Project) -> None:
    data = load_recipe("kimi26-ep4").resolved()
    data["parallelism"]["tp"] = "eight"
    path = project.write("x.lock.json", json.dumps({"recipe": data}), folder="locks")
    assert error_of(path).message.startswith(
        "locks/x.lock.json: recipe.parallelism.tp: expected an integer"
    )
    path.write_text(json.dumps({"recipe": [1]}))
    assert "top-level 'recipe' mapping" in error_of(path).message
    path.write_text("{not json")
    assert "invalid JSON at line 1" in error_of(path).message
    data = load_recipe("kimi26-ep4").resolved() | {"extends": "kimi26-tp8"}
    path.write_text(json.dumps({"recipe": data}))
    assert "recipe.extends: a lock holds a fully resolved recipe" in error_of(path).message
