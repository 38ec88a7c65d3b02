"""Rendering: every shipped recipe's argv parses with an argparse parser built from the catalog."""

from __future__ import annotations

import argparse
import json
import shlex
from importlib import resources
from typing import Any

import pytest

from repro.errors import RecipeError
from repro.lock.locked import resolved
from repro.recipe import (
    LAUNCH,
    check_recipe,
    load_catalog,
    load_recipe,
    render_compose,
    render_env,
    render_server_argv,
    render_shell,
)
from repro.recipe.images import catalog_for_recipe, catalog_version, image_for_recipe
from repro.schema.option_catalog import Catalog

from .conftest import BASE_RECIPE, SHIPPED_RECIPES, Project

_TYPES: dict[str, Any] = {"int": int, "float": float}


def build_parser(catalog: dict[str, Any]) -> argparse.ArgumentParser:
    """An argparse parser equivalent to ServerArgs.add_cli_args, from a catalog's JSON form."""
    parser = argparse.ArgumentParser(
        prog="sglang.launch_server", add_help=False, exit_on_error=False
    )
    for flag in catalog["flags"]:
        options, kind = flag["options"], flag["kind"]
        kwargs: dict[str, Any] = {"dest": flag["dest"], "default": flag["default"]}
        if kind == "help":
            continue
        if kind in ("storetrue", "deprecatedstoretrue"):
            kwargs["action"] = "store_true"
        elif kind == "booleanoptional":
            options = [o for o in options if not o.startswith("--no-")]
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            if flag["type"] in _TYPES:
                kwargs["type"] = _TYPES[flag["type"]]
            if flag["nargs"] not in (None, 0):
                kwargs["nargs"] = flag["nargs"]
            if flag["choices"]:
                kwargs["choices"] = flag["choices"]
        parser.add_argument(*options, **kwargs)
    return parser


def parse(catalog: Catalog, argv: list[str]) -> argparse.Namespace:
    """Parse with the catalog in force: its SGLang version's options from the package catalog,
    less those a stand-in's image era lacks, plus what the era and a patch set add."""
    shipped = resources.files("repro").joinpath("catalogs", f"sglang-{catalog.sglang_version}.json")
    data = json.loads(shipped.read_text())
    data["flags"] = [f for f in data["flags"] if all(catalog.has(o) for o in f["options"])]
    data["flags"] += [o.to_dict() for o in catalog.options if o.provided_by]
    namespace, unknown = build_parser(data).parse_known_args(argv)
    assert unknown == []
    return namespace


RELEASE_IMAGE = "sglang-0.5.23-cu13"


@pytest.mark.parametrize("name", SHIPPED_RECIPES)
def test_shipped_recipe_renders_and_parses(project: Project, name: str) -> None:
    recipe = load_recipe(name)
    assert [f for f in check_recipe(resolved(recipe)) if f.severity == "error"] == []
    catalog = catalog_for_recipe(recipe)
    image = image_for_recipe(recipe)
    assert catalog.sglang_version == catalog_version(image)
    argv = render_server_argv(recipe, catalog)
    ns = parse(catalog, argv)
    assert ns.model_path == recipe.model.repo
    assert ns.revision == recipe.model.revision
    assert ns.tp_size == recipe.parallelism.tp
    assert ns.pp_size == recipe.parallelism.pp
    assert ns.ep_size == recipe.parallelism.ep
    assert ns.port == recipe.server.port
    assert ns.trust_remote_code is recipe.model.trust_remote_code
    if recipe.speculative:
        assert ns.speculative_algorithm == recipe.speculative.algorithm
        assert catalog.has_algorithm(ns.speculative_algorithm)
        assert recipe.drafter is not None
        assert ns.speculative_draft_model_path == recipe.drafter.repo
        # Unset, SGLang caps speculative decoding at 48 running requests.
        assert ns.max_running_requests >= max(recipe.bench.concurrencies)
    # Every token that names an option names one of the image's SGLang release, or one the
    # image spec declares: its era's (no release holds it) or its patch set's.
    base = load_catalog(catalog.sglang_version)
    declared = {image.name, image.patch_set.name if image.patch_set else image.name}
    for token in argv:
        if token.startswith("--"):
            opt = catalog.find(token)
            assert opt is not None
            assert base.has(token) or opt.provided_by in declared


def test_ddtree_budget_parses_only_with_the_patch_set(project: Project) -> None:
    recipe = load_recipe("qwen36-27b-tp1-dflash-ddtree")
    catalog = catalog_for_recipe(recipe)
    argv = render_server_argv(recipe, catalog)
    assert parse(catalog, argv).speculative_ddtree_budget == 15
    with pytest.raises(RecipeError, match="no option --speculative-ddtree-budget"):
        render_server_argv(recipe, load_catalog("0.5.23"))


def test_ep4_is_tp8_with_ep4(project: Project) -> None:
    recipe = load_recipe("kimi26-ep4")
    argv = render_server_argv(recipe, catalog_for_recipe(recipe))
    assert argv[argv.index("--tp-size") + 1] == "8"
    assert argv[argv.index("--ep-size") + 1] == "4"
    assert "--dp-size" not in argv
    assert "tp 8 + ep 4" in recipe.description


def test_cuda_graph_off_uses_the_non_deprecated_spelling(project: Project) -> None:
    recipe = load_recipe("kimi26-tp8-nograph")
    catalog = catalog_for_recipe(recipe)
    argv = render_server_argv(recipe, catalog)
    assert "--disable-cuda-graph" not in argv
    ns = parse(catalog, argv)
    assert ns.cuda_graph_backend_decode == "disabled"
    assert ns.cuda_graph_backend_prefill == "disabled"
    old = Catalog(
        "0.5.0",
        [o for o in catalog.options if not o.name.startswith("--cuda-graph-backend")],
        catalog.speculative_algorithms,
    )
    assert "--disable-cuda-graph" in render_server_argv(recipe, old)


def test_dp_attention_renders_the_spelling_of_the_images_era(project: Project) -> None:
    dpa = BASE_RECIPE.replace("{tp: 8}", "{tp: 8, dp: 4, dp_attention: true}")
    project.recipe("dpa", dpa.replace("sglang-nightly-cu13", RELEASE_IMAGE))
    recipe = load_recipe("dpa")
    catalog = catalog_for_recipe(recipe)
    argv = render_server_argv(recipe, catalog)
    assert argv[argv.index("--attn-dp-size") + 1] == "4"
    assert "--enable-dp-attention" not in argv and "--dp-size" not in argv
    # the nightly is 0.5.17's era: no --attn-dp-size yet
    project.recipe("dpa-nightly", dpa)
    nightly = load_recipe("dpa-nightly")
    argv = render_server_argv(nightly, catalog_for_recipe(nightly))
    assert argv[argv.index("--dp-size") + 1] == "4" and "--enable-dp-attention" in argv
    plain = BASE_RECIPE.replace("{tp: 8}", "{tp: 4, dp: 2}")
    project.recipe("dp", plain)
    argv = render_server_argv(load_recipe("dp"), catalog)
    assert argv[argv.index("--dp-size") + 1] == "2"


def test_structured_fields_render(project: Project) -> None:
    project.recipe(
        "full",
        """\
image: sglang-nightly-cu13
model: {repo: org/model, served_model_name: m}
parallelism: {tp: 8}
topology: {gpus: 4, nodes: 2}
server:
  mem_fraction_static: 0.85
  context_length: 8192
  cuda_graph_max_bs: 64
  max_running_requests: 32
  enable_metrics: false
  extra_args: [--chunked-prefill-size, "4096"]
bench: {concurrencies: [1], prompts_per_level: 8, input_len: 100, output_len: 100}
""",
    )
    recipe = load_recipe("full")
    catalog = catalog_for_recipe(recipe)
    ns = parse(catalog, render_server_argv(recipe, catalog))
    assert ns.mem_fraction_static == 0.85
    assert ns.context_length == "8192"  # human_readable_int: parsed as text by this test parser
    assert ns.cuda_graph_max_bs_decode == 64
    assert ns.max_running_requests == 32
    assert ns.enable_metrics is False
    assert ns.chunked_prefill_size == 4096
    assert ns.nnodes == 2
    assert ns.served_model_name == "m"


def test_misspelled_extra_arg_is_one_line(project: Project) -> None:
    project.recipe(
        "typo",
        BASE_RECIPE
        + "server: {extra_args: [--chunked-prefill-size, '8', --specualtive-algorithm, EAGLE]}\n",
    )
    with pytest.raises(RecipeError) as info:
        render_server_argv(load_recipe("typo"), load_catalog("0.5.23"))
    assert info.value.message == (
        "recipes/typo.yaml: server.extra_args[2]: unknown SGLang option "
        "'--specualtive-algorithm' (did you mean '--speculative-algorithm'?)"
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("[--tp-size, '2']", "'--tp-size' is already set by parallelism.tp"),
        (
            "[--chunked-prefill-size, '1', --chunked-prefill-size, '2']",
            "repeats server.extra_args[0]",
        ),
        ("[--chunked-prefill-size]", "'--chunked-prefill-size' needs a value"),
        ("[--chunked-prefill-size, lots]", "expects an integer, got 'lots'"),
        ("[--attention-backend, flashinfr]", "did you mean 'flashinfer'"),
        ("[--enable-metrics=yes]", "takes no value"),
        ("[stray]", "follows no option"),
        ("[--tool-call-parser, kimi]", "not a valid choice"),
    ],
)
def test_extra_args_problems(project: Project, extra: str, message: str) -> None:
    project.recipe("x", BASE_RECIPE + f"server: {{enable_metrics: true, extra_args: {extra}}}\n")
    recipe = load_recipe("x")
    findings = [f for f in check_recipe(resolved(recipe)) if f.severity == "error"]
    assert any(message in f.message and f.path.startswith("server.extra_args[") for f in findings)
    with pytest.raises(RecipeError):
        render_server_argv(recipe, catalog_for_recipe(recipe))


def test_deprecated_extra_arg_warns_with_replacement(project: Project) -> None:
    on_release = BASE_RECIPE.replace("sglang-nightly-cu13", RELEASE_IMAGE)
    project.recipe("dep", on_release + "server: {extra_args: [--enable-dp-attention]}\n")
    recipe = load_recipe("dep")
    [f] = [f for f in check_recipe(resolved(recipe)) if f.rule == "deprecated-option"]
    assert f.severity == "warning"
    assert f.path == "server.extra_args[0]"
    assert "use --attn-dp-size" in f.message
    assert "--enable-dp-attention" in render_server_argv(recipe, catalog_for_recipe(recipe))


def test_extra_args_inline_values(project: Project) -> None:
    project.recipe(
        "eq",
        BASE_RECIPE + "server: {extra_args: ['--chunked-prefill-size=4096', "
        "--cuda-graph-bs-decode, '1', '2', '4']}\n",
    )
    recipe = load_recipe("eq")
    catalog = catalog_for_recipe(recipe)
    ns = parse(catalog, render_server_argv(recipe, catalog))
    assert ns.chunked_prefill_size == 4096 and ns.cuda_graph_bs_decode == [1, 2, 4]


def test_env_and_simulator_env(project: Project) -> None:
    demo = load_recipe("demo")
    assert render_env(demo) == {
        "REPRO_SIM_PROFILE": "demo",
        "REPRO_SIM_LOAD_SECONDS": "2.0",
        "REPRO_SIM_SEED": "0",
    }
    project.recipe("e", BASE_RECIPE + "env: {NCCL_P2P_DISABLE: 1, B: 'x y'}\n")
    assert render_env(load_recipe("e")) == {"NCCL_P2P_DISABLE": "1", "B": "x y"}


def test_shell_render_is_pasteable(project: Project) -> None:
    project.recipe(
        "sh",
        BASE_RECIPE
        + 'env: {A: "it\'s"}\nserver: {extra_args: [--json-model-override-args, \'{"a": 1}\']}\n',
    )
    recipe = load_recipe("sh")
    catalog = catalog_for_recipe(recipe)
    text = render_shell(recipe, catalog)
    tokens = shlex.split(text.replace("\\\n", " "))
    assert tokens[0] == "A=it's"
    assert tokens[1:] == [*LAUNCH, *render_server_argv(recipe, catalog)]
    assert text.count("\\\n") == len([t for t in tokens if t.startswith("--")])


def test_shell_render_of_the_dflash_baseline(project: Project) -> None:
    recipe = load_recipe("kimi26-ep4-dflash")
    text = render_shell(recipe, catalog_for_recipe(recipe))
    assert text.startswith(
        "SGLANG_ENABLE_PCIE_IPC_ALLREDUCE=1 python3 -m sglang.launch_server \\\n"
        "  --model-path moonshotai/Kimi-K2.6 \\\n"
    )
    assert "  --speculative-draft-model-path z-lab/Kimi-K2.6-DFlash" in text


def test_compose_fragment_command_is_a_list(project: Project) -> None:
    recipe = load_recipe("demo")
    fragment = render_compose(recipe, catalog_for_recipe(recipe))
    assert fragment["command"][:3] == list(LAUNCH)
    assert all(isinstance(t, str) for t in fragment["command"])
    assert fragment["environment"]["REPRO_SIM_PROFILE"] == "demo"
