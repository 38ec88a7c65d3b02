"""`repro recipe`: list, show, render and check recipes; print the JSON Schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click
import yaml
from rich.console import Console
from rich.table import Table

from repro.cli.options import engine_option, json_option, sglang_python_option
from repro.errors import RecipeError
from repro.lock import LockError, load_locked, require_checked
from repro.realengine.drystart import EngineCheck, check_engines, resolved_lines
from repro.realengine.drystart import findings as engine_findings
from repro.recipe import (
    check_recipe,
    list_recipe_files,
    load_recipe,
    render_compose,
    render_env,
    render_server_argv,
    render_shell,
)
from repro.recipe.findings import display_path
from repro.recipe.placeholder import locked_placeholder
from repro.recipe.render import LAUNCH
from repro.schema.image import ImageSpec
from repro.schema.lock import Locked
from repro.schema.recipe import Recipe
from repro.settings import RECIPES_DIR
from repro.tables import fit


def _dir(ctx: click.Context) -> Path | None:
    value = ctx.obj.get("recipes_dir") if ctx.obj else None
    return Path(value) if value else None


def _dump_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2))


@click.group("recipe")
@click.option(
    "--recipes-dir",
    type=click.Path(file_okay=False, path_type=Path),
    envvar=RECIPES_DIR.name,
    help=f"Directory of recipes (default: ${RECIPES_DIR.name}, else ./recipes).",
)
@click.pass_context
def recipe(ctx: click.Context, recipes_dir: Path | None) -> None:
    """Recipes: list, show, render and check deployments."""
    ctx.obj = {"recipes_dir": recipes_dir}


@recipe.command("list")
@json_option("the result")
@click.pass_context
def list_cmd(ctx: click.Context, as_json: bool) -> None:
    """Every recipe in the recipes directory, with what it deploys."""
    rows: list[dict[str, Any]] = []
    for path in list_recipe_files(_dir(ctx)):
        try:
            r = load_recipe(path, _dir(ctx))
        except RecipeError as err:
            rows.append(
                {"name": path.stem, "file": str(path), "valid": False, "error": err.problems[0]}
            )
            continue
        par = r.parallelism
        rows.append(
            {
                "name": r.name,
                "file": str(path),
                "valid": True,
                "extends": r.extends,
                "image": r.image,
                "model": r.model.repo,
                "drafter": r.drafter.repo if r.drafter else None,
                "algorithm": r.speculative.algorithm if r.speculative else None,
                "parallelism": {"tp": par.tp, "ep": par.ep, "pp": par.pp, "dp": par.dp},
                "gpus": r.topology.gpus,
                "gpu_models": r.topology.gpu_models,
                "description": r.description.strip(),
            }
        )
    if as_json:
        _dump_json(rows)
        return
    table = Table(title="recipes")
    table.add_column("name", no_wrap=True)
    for column in ("model", "speculative", "tp/ep/pp/dp", "GPUs", "image"):
        table.add_column(column, justify="right" if column == "tp/ep/pp/dp" else "left")
    for row in rows:
        if not row["valid"]:
            table.add_row(row["name"], f"[red]invalid[/red]: {row['error']}", "", "", "", "")
            continue
        par = row["parallelism"]
        spec = f"{row['algorithm']} ({row['drafter']})" if row["algorithm"] else "-"
        gpus = f"{row['gpus']} x {'/'.join(row['gpu_models']) or 'any'}" if row["gpus"] else "none"
        table.add_row(
            row["name"],
            row["model"],
            spec,
            f"{par['tp']}/{par['ep']}/{par['pp']}/{par['dp']}",
            gpus,
            row["image"],
        )
    Console().print(fit(table))


@recipe.command("show")
@click.argument("ref")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of YAML.")
@click.pass_context
def show_cmd(ctx: click.Context, ref: str, as_json: bool) -> None:
    """The fully resolved recipe REF (name, file or lock), extends merged."""
    r = load_recipe(ref, _dir(ctx))
    data = r.resolved()
    if as_json:
        _dump_json(data)
        return
    chain = " <- ".join(display_path(p) for p in r.chain)
    click.echo(f"# {r.name}: resolved from {chain}")
    click.echo(yaml.safe_dump(data, sort_keys=False, width=100).rstrip())


@recipe.command("render")
@click.argument("ref")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["shell", "json", "compose"]),
    default="shell",
    show_default=True,
    help="shell: a command to paste; json: argv and env; compose: the service's command and env.",
)
@click.option(
    "--resolved",
    is_flag=True,
    help="Also run SGLang's own start-up code on it (the engine dry-start) and print what "
    "its hooks resolved: every value they changed, which hook, and SGLang's warnings.",
)
@sglang_python_option("The engine's Python (.venv-sglang) --resolved runs in.")
@click.pass_context
def render_cmd(ctx: click.Context, ref: str, fmt: str, resolved: bool, sglang_python: Path) -> None:
    """The exact SGLang server command of recipe REF (refused when `check` finds errors).

    \b
      repro recipe render kimi26-ep4-dflash
      repro recipe render --resolved kimi26-ep4-dflash   # what SGLang makes of it
    """
    locked = require_checked(load_locked(ref, _dir(ctx)))
    r = locked.served
    catalog = locked.need_catalog()
    engine = check_engines([locked], sglang_python)[0] if resolved else None
    if fmt == "shell":
        click.echo(render_shell(r, catalog))
    elif fmt == "json":
        argv = render_server_argv(r, catalog)
        data: dict[str, Any] = {
            "recipe": r.name,
            "image_spec": r.image,
            "sglang_version": catalog.sglang_version,
            "command": [*LAUNCH, *argv],
            "argv": argv,
            "env": render_env(r),
        }
        if engine is not None:
            data["resolved"] = _engine_json(engine)
        _dump_json(data)
        return
    else:
        fragment = {"services": {"sglang": render_compose(r, catalog)}}
        click.echo(yaml.safe_dump(fragment, sort_keys=False, width=100).rstrip())
    if engine is not None:
        for line in resolved_lines(engine):
            click.echo(line)
    if engine is not None and (engine.result is None or engine.result.refused is not None):
        sys.exit(1)


def _engine_json(check: EngineCheck) -> dict[str, Any]:
    if check.result is None:
        return {"not_run": check.not_run}
    return check.result.model_dump(mode="json")


def _check_one(path_or_ref: str | Path, recipes_dir: Path | None) -> tuple[dict[str, Any], Any]:
    """The check's result of one recipe, and its Locked (None when it did not load)."""
    try:
        locked = load_locked(path_or_ref, recipes_dir)
        r = locked.recipe
    except (RecipeError, LockError) as err:
        name = Path(path_or_ref).stem if isinstance(path_or_ref, Path) else str(path_or_ref)
        problems = err.problems if isinstance(err, RecipeError) else [err.message]
        return {
            "recipe": name,
            "ok": False,
            "findings": [
                {"severity": "error", "message": line, "rule": "load"} for line in problems
            ],
            "lines": problems,
        }, None
    # a lock: against the image and catalog it pins
    findings = check_recipe(locked)
    placeholder = locked_placeholder(locked)
    if placeholder is not None:
        findings = [*findings, placeholder]
    return {
        "recipe": r.name,
        "file": str(r.source_path),
        "ok": not any(f.severity == "error" for f in findings),
        "findings": [f.to_dict() for f in findings],
        "lines": [f"{f.severity}: {f}" for f in findings],
    }, locked


def _start_up_skipped(locked: Locked, check: EngineCheck) -> bool:
    """A recipe of a real SGLang image whose start-up did not run (the simulator's has
    none to run)."""
    spec = locked.image_spec
    return check.result is None and not (spec is not None and spec.simulated)


def _not_run_line(count: int, sglang_python: Path) -> str:
    """The one line under the count when SGLang's start-up did not run for some recipes."""
    why = (
        "not installed (make sglang-engine)"
        if not sglang_python.is_file()
        else "each recipe's line says why"
    )
    recipes = "1 recipe" if count == 1 else f"{count} recipes"
    return f"SGLang's start-up did not run for {recipes}: {why}"


def _engine_line(check: EngineCheck) -> str:
    """The one line of the dry start under a recipe in `recipe check`."""
    if check.result is None:
        return check.not_run or "engine dry-start not run"
    result = check.result
    if result.refused is not None:
        return f"engine dry-start: SGLang {result.sglang_version} refuses it (above)"
    classes = [c.architecture for c in (result.model, result.drafter) if c is not None]
    return (
        f"engine dry-start: SGLang {result.sglang_version} starts it up to the GPU "
        f"({', '.join(classes)}; {len(result.changed)} values resolved)"
    )


def _add_engine(result: dict[str, Any], check: EngineCheck) -> None:
    if check.target is not None and check.result is not None:
        for finding in engine_findings(check.target, check.result):
            result["findings"].insert(0, finding.to_dict())
            result["lines"].insert(0, f"{finding.severity}: {finding}")
            result["ok"] = False
    result["lines"].append(_engine_line(check))
    result["engine"] = _engine_json(check)


@recipe.command("check")
@click.argument("refs", nargs=-1)
@json_option("the result")
@click.option("--strict", is_flag=True, help="Warnings fail the check too.")
@engine_option(
    "Also dry-start each recipe on SGLang's own start-up code of its image's release "
    "(scripts/ensure-sglang installs it), on tiny twins of its model and drafter."
)
@sglang_python_option("The engine's Python (.venv-sglang) the dry start runs in.")
@click.pass_context
def check_cmd(
    ctx: click.Context,
    refs: tuple[str, ...],
    as_json: bool,
    strict: bool,
    engine: bool,
    sglang_python: Path,
) -> None:
    """Check recipes REFS (default: every recipe in the recipes directory).

    Each recipe is checked against its image's option catalog and the rules, then (unless
    --no-engine) dry-started: SGLang's own argument parsing and every start-up hook of the
    release its image pins, and the model classes of tiny twins of its model and drafter,
    up to the first step that needs a GPU. Where SGLang would refuse to start, the check
    fails with SGLang's message on the recipe field it names.

    Exits non-zero when any recipe has an error (or, with --strict, a warning, or a
    recipe whose SGLang start-up did not run, e.g. without the engine installed).

    \b
      repro recipe check kimi26-ep4-dflash
      repro recipe check --no-engine     # catalog and rules only, in seconds
    """
    targets: list[str | Path] = list(refs) or list(list_recipe_files(_dir(ctx)))
    checked = [_check_one(t, _dir(ctx)) for t in targets]
    results = [result for result, _ in checked]
    skipped: set[int] = set()  # id() of results whose SGLang start-up did not run
    if engine:
        # A recipe the catalog or rules already refuse is not dry-started: SGLang's parser
        # would only say the same again.
        loaded = [(result, locked) for result, locked in checked if result["ok"]]
        if not as_json and loaded:
            click.echo(f"dry-starting {len(loaded)} recipes on SGLang's start-up code", err=True)
        engine_checks = check_engines([locked for _, locked in loaded], sglang_python)
        for (result, locked), engine_check in zip(loaded, engine_checks, strict=True):
            _add_engine(result, engine_check)
            if _start_up_skipped(locked, engine_check):
                skipped.add(id(result))
    failed = [
        r
        for r in results
        if not r["ok"]
        or (strict and (any(f["severity"] == "warning" for f in r["findings"]) or id(r) in skipped))
    ]
    if as_json:
        _dump_json([{k: v for k, v in r.items() if k != "lines"} for r in results])
    else:
        for r in results:
            mark = click.style("ok", fg="green") if r["ok"] else click.style("FAIL", fg="red")
            click.echo(f"{mark:>4} {r['recipe']}")
            for line in r["lines"]:
                color = "red" if line.startswith("error") or not r["ok"] else "yellow"
                if line.startswith("engine dry-start"):
                    color = "cyan"
                click.secho(f"     {line}", fg=color)
        click.echo(f"{len(results) - len(failed)}/{len(results)} recipes pass")
    if skipped:
        click.echo(_not_run_line(len(skipped), sglang_python), err=as_json)
    if failed:
        sys.exit(1)


@recipe.command("schema")
@click.option("--image", is_flag=True, help="The schema of image specs instead of recipes.")
def schema_cmd(image: bool) -> None:
    """The JSON Schema of recipes (for editor completion), or of image specs."""
    if image:
        schema = ImageSpec.model_json_schema()
        schema["title"] = "repro image spec"
    else:
        schema = Recipe.model_json_schema()
        schema["title"] = "repro recipe"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    _dump_json(schema)
