"""Recipes: one SGLang deployment each (model, drafter, speculative settings, parallelism,
topology, server flags, env, benchmark plan), loaded from YAML with `extends:`, validated
against SGLang's real option catalog, and rendered as the exact server argv and environment.

Public API (other stages call these; the types, Recipe and Catalog, live in repro.schema):

    load_recipe(ref, recipes_dir=None) -> Recipe      # a name, a path, or a lock file
    check_recipe(locked) -> list[Finding]             # errors and warnings, file + field path
    render_server_argv(recipe, catalog) -> list[str]  # after `python3 -m sglang.launch_server`
    render_env(recipe) -> dict[str, str]
    load_catalog(version) -> Catalog                  # shipped catalog of an SGLang version
    catalog_for_recipe(recipe) -> Catalog             # the catalog of the recipe's image
"""

from repro.recipe.argv_check import check_argv, load_catalog
from repro.recipe.findings import Finding
from repro.recipe.images import catalog_for_recipe, image_for_recipe
from repro.recipe.loader import default_recipes_dir, list_recipe_files, load_recipe
from repro.recipe.render import (
    LAUNCH,
    render_command,
    render_compose,
    render_env,
    render_server_argv,
    render_shell,
)
from repro.recipe.rules import RULES, check_recipe

__all__ = [
    "LAUNCH",
    "RULES",
    "Finding",
    "catalog_for_recipe",
    "check_argv",
    "check_recipe",
    "default_recipes_dir",
    "image_for_recipe",
    "list_recipe_files",
    "load_catalog",
    "load_recipe",
    "render_command",
    "render_compose",
    "render_env",
    "render_server_argv",
    "render_shell",
]
