"""`repro recipe ...` through click's CliRunner, on a copy of the project."""

from __future__ import annotations

import json
import shlex

from click.testing import CliRunner

from repro.cli import main

from .conftest import SHIPPED_RECIPES, Project


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["recipe", *args])
    return result.exit_code, result.stdout, result.stderr


def test_list_table_and_json(project: Project) -> None:
    code, out, _ = run("list")
    assert code == 0
    for name in ("kimi26-ep4-dflash", "qwen36-27b-tp1-dflash-ddtree", "demo"):
        assert name in out
    code, out, _ = run("list", "--json")
    rows = json.loads(out)
    assert [r["name"] for r in rows] == SHIPPED_RECIPES
    ep4 = next(r for r in rows if r["name"] == "kimi26-ep4")
    assert ep4["parallelism"] == {"tp": 8, "ep": 4, "pp": 1, "dp": 1} and ep4["valid"]


def test_list_shows_broken_recipes(project: Project) -> None:
    project.recipe("broken", "image: [\n")
    code, out, _ = run("list", "--json")
    assert code == 0
    broken = next(r for r in json.loads(out) if r["name"] == "broken")
    assert not broken["valid"] and "invalid YAML" in broken["error"]


def test_show_resolves_extends(project: Project) -> None:
    code, out, _ = run("show", "kimi26-tp8-dflash-b300")
    assert code == 0
    assert out.startswith(
        "# kimi26-tp8-dflash-b300: resolved from recipes/kimi26-tp8-dflash-b300.yaml"
    )
    assert "gpu_models:\n  - B300" in out
    code, out, _ = run("show", "kimi26-tp8-dflash-b300", "--json")
    data = json.loads(out)
    assert data["topology"]["gpu_models"] == ["B300"] and data["extends"] is None
    assert data["drafter"]["repo"] == "z-lab/Kimi-K2.6-DFlash"  # from kimi26-tp8-dflash-b200


def test_render_shell_is_a_pasteable_command(project: Project) -> None:
    code, out, _ = run("render", "kimi26-ep4-dflash", "--format", "shell")
    assert code == 0
    tokens = shlex.split(out.replace("\\\n", " "))
    assert tokens[:4] == [
        "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1",  # the env prefix
        "python3",
        "-m",
        "sglang.launch_server",
    ]
    assert tokens[tokens.index("--speculative-algorithm") + 1] == "DFLASH"
    assert tokens[tokens.index("--ep-size") + 1] == "4"


def test_render_json_and_compose(project: Project) -> None:
    code, out, _ = run("render", "demo", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["command"][:3] == ["python3", "-m", "sglang.launch_server"]
    assert data["command"][3:] == data["argv"] and data["env"]["REPRO_SIM_PROFILE"] == "demo"
    code, out, _ = run("render", "demo", "--format", "compose")
    assert code == 0 and "command:\n    - python3\n" in out


def test_check_all_shipped_recipes_pass(project: Project) -> None:
    code, out, _ = run("check", "--no-engine")
    assert code == 0, out
    assert f"{len(SHIPPED_RECIPES)}/{len(SHIPPED_RECIPES)} recipes pass" in out


def test_check_fails_on_an_error_with_one_line(project: Project) -> None:
    project.recipe(
        "typo",
        "extends: kimi26-ep4\nserver: {extra_args: [--specualtive-algorithm, EAGLE]}\n",
    )
    code, out, _ = run("check", "--no-engine", "typo", "kimi26-ep4")
    assert code == 1
    assert (
        "error: recipes/typo.yaml: server.extra_args[0]: unknown SGLang option "
        "'--specualtive-algorithm' (did you mean '--speculative-algorithm'?)"
    ) in out
    assert "1/2 recipes pass" in out
    code, out, _ = run("check", "--no-engine", "--json")
    assert code == 1
    results = {r["recipe"]: r for r in json.loads(out)}
    assert not results["typo"]["ok"] and results["kimi26-ep4"]["ok"]
    [finding] = [f for f in results["typo"]["findings"] if f["severity"] == "error"]
    assert finding["path"] == "server.extra_args[0]" and finding["file"] == "recipes/typo.yaml"


def test_check_reports_load_errors_and_strict_warnings(project: Project) -> None:
    (project.recipes / "bin.yaml").write_bytes(b"\xff\x00")
    code, out, _ = run("check", "--no-engine", "bin")
    assert code == 1 and "recipes/bin.yaml: not UTF-8 text" in out
    project.recipe("warn", "extends: kimi26-tp8\nname: other\n")
    assert run("check", "--no-engine", "warn")[0] == 0
    assert run("check", "--no-engine", "warn", "--strict")[0] == 1


def test_missing_recipe_is_a_clean_error(project: Project) -> None:
    code, _, err = run("render", "kimi26-ep5")
    assert code == 1
    assert err.startswith("error: no recipe named 'kimi26-ep5'")
    assert "Traceback" not in err


def test_schema_is_json_schema_with_descriptions(project: Project) -> None:
    code, out, _ = run("schema")
    schema = json.loads(out)
    assert code == 0 and schema["title"] == "repro recipe"
    assert schema["additionalProperties"] is False
    props = schema["$defs"]["Parallelism"]["properties"]
    assert "description" in props["ep"] and "divide tp" in props["ep"]["description"]
    code, out, _ = run("schema", "--image")
    assert json.loads(out)["title"] == "repro image spec"


def test_recipes_dir_option(project: Project) -> None:
    moved = project.root / "elsewhere"
    project.recipes.rename(moved)
    assert run("list")[0] != 0
    code, out, _ = run("--recipes-dir", str(moved), "list", "--json")
    assert code == 0 and len(json.loads(out)) == len(SHIPPED_RECIPES)
