"""Rendering a recipe: the exact SGLang server argv (a list, never a shell string) and env.

Every option comes from the catalog of the image the recipe uses: where SGLang renamed an
option, the non-deprecated spelling the catalog has is chosen (e.g. CUDA graphs off is
`--cuda-graph-backend-decode disabled --cuda-graph-backend-prefill disabled` on 0.5.23, and
`--disable-cuda-graph` only on a catalog that has nothing newer). `server.extra_args` are read
with the same catalog, and may not set what a structured field already sets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from repro.errors import RecipeError
from repro.recipe.argv_check import check_argv, is_number
from repro.recipe.findings import Loc
from repro.recipe.loader import locate
from repro.schema.option_catalog import Catalog
from repro.schema.recipe import Recipe
from repro.settings import SIM_LOAD_SECONDS, SIM_PROFILE, SIM_SEED
from repro.shellquote import word, words

LAUNCH = ("python3", "-m", "sglang.launch_server")

# Options a structured field owns (by dest), refused in server.extra_args even where the field
# is unset: the model, the drafter and the trust in their code are the recipe's to show.
OWNED_BY_FIELD = {
    "model_path": "model.repo",
    "revision": "model.revision",
    "trust_remote_code": "model.trust_remote_code",
    "speculative_draft_model_path": "drafter.repo",
    "speculative_draft_model_revision": "drafter.revision",
    "enable_dp_lm_head": "parallelism.dp_lm_head",
}
# Files that would decide options or configs out of the recipe's sight (by dest): refused.
HIDDEN_BY_FILE = {
    "config": "its options would not show in the recipe: write them in the recipe",
    "decrypted_config_file": "the model's config is model.repo's at model.revision",
    "decrypted_draft_config_file": "the drafter's config is drafter.repo's at drafter.revision",
}


@dataclass
class Issue:
    """A problem found while rendering: field path, severity, message, rule name."""

    loc: Loc
    severity: str
    message: str
    rule: str


@dataclass
class Rendered:
    argv: list[str]
    issues: list[Issue] = field(default_factory=list)
    # index in argv of each token's option -> the recipe field that produced it
    origins: list[tuple[Loc, list[str]]] = field(default_factory=list)


def _value(value: Any) -> str:
    if isinstance(value, float):
        return repr(value)
    return str(value)


class _Builder:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self.items: list[tuple[Loc, list[str]]] = []
        self.issues: list[Issue] = []

    def add(self, loc: Loc, names: tuple[str, ...], *values: Any) -> None:
        """Add the first spelling in `names` that the catalog accepts, with `values`."""
        name = self.catalog.first(*names)
        if name is None:
            self.issues.append(
                Issue(
                    loc,
                    "error",
                    f"the image's SGLang {self.catalog.sglang_version} catalog has no option "
                    f"{' or '.join(names)}",
                    "option-exists",
                )
            )
            return
        self.items.append((loc, [name, *(_value(v) for v in values)]))


def _structured(recipe: Recipe, catalog: Catalog) -> _Builder:
    b = _Builder(catalog)
    m, par, srv, topo = recipe.model, recipe.parallelism, recipe.server, recipe.topology
    b.add(("model", "repo"), ("--model-path",), m.repo)
    b.add(("model", "revision"), ("--revision",), m.revision)
    if m.trust_remote_code:
        b.add(("model", "trust_remote_code"), ("--trust-remote-code",))
    if m.served_model_name:
        b.add(("model", "served_model_name"), ("--served-model-name",), m.served_model_name)
    b.add(("server", "host"), ("--host",), srv.host)
    b.add(("server", "port"), ("--port",), srv.port)
    b.add(("parallelism", "tp"), ("--tp-size",), par.tp)
    if par.pp != 1:
        b.add(("parallelism", "pp"), ("--pp-size",), par.pp)
    if par.ep != 1:
        b.add(("parallelism", "ep"), ("--ep-size",), par.ep)
    if par.dp_attention:
        attn_dp = catalog.find("--attn-dp-size")
        if attn_dp is not None and not attn_dp.deprecated:
            b.add(("parallelism", "dp"), ("--attn-dp-size",), par.dp)
        else:
            b.add(("parallelism", "dp"), ("--dp-size",), par.dp)
            b.add(("parallelism", "dp_attention"), ("--enable-dp-attention",))
    elif par.dp != 1:
        b.add(("parallelism", "dp"), ("--dp-size",), par.dp)
    if par.dp_lm_head:
        b.add(("parallelism", "dp_lm_head"), ("--enable-dp-lm-head",))
    if topo.nodes > 1:
        b.add(("topology", "nodes"), ("--nnodes",), topo.nodes)
    if srv.mem_fraction_static is not None:
        b.add(
            ("server", "mem_fraction_static"), ("--mem-fraction-static",), srv.mem_fraction_static
        )
    if srv.context_length is not None:
        b.add(("server", "context_length"), ("--context-length",), srv.context_length)
    if srv.max_running_requests is not None:
        b.add(
            ("server", "max_running_requests"),
            ("--max-running-requests",),
            srv.max_running_requests,
        )
    if not srv.cuda_graph:
        decode = catalog.first("--cuda-graph-backend-decode")
        prefill = catalog.first("--cuda-graph-backend-prefill")
        if decode and prefill:
            b.add(("server", "cuda_graph"), (decode,), "disabled")
            b.add(("server", "cuda_graph"), (prefill,), "disabled")
        else:
            b.add(("server", "cuda_graph"), ("--disable-cuda-graph",))
    if srv.cuda_graph_max_bs is not None:
        b.add(
            ("server", "cuda_graph_max_bs"),
            ("--cuda-graph-max-bs-decode", "--cuda-graph-max-bs"),
            srv.cuda_graph_max_bs,
        )
    if srv.tool_call_parser:
        b.add(("server", "tool_call_parser"), ("--tool-call-parser",), srv.tool_call_parser)
    if srv.reasoning_parser:
        b.add(("server", "reasoning_parser"), ("--reasoning-parser",), srv.reasoning_parser)
    if srv.enable_metrics:
        b.add(("server", "enable_metrics"), ("--enable-metrics",))
    spec = recipe.speculative
    if spec is not None:
        b.add(("speculative", "algorithm"), ("--speculative-algorithm",), spec.algorithm)
        if recipe.drafter is not None:
            b.add(("drafter", "repo"), ("--speculative-draft-model-path",), recipe.drafter.repo)
            b.add(
                ("drafter", "revision"),
                ("--speculative-draft-model-revision",),
                recipe.drafter.revision,
            )
        optional: list[tuple[str, tuple[str, ...], Any]] = [
            ("num_draft_tokens", ("--speculative-num-draft-tokens",), spec.num_draft_tokens),
            ("block_size", ("--speculative-dflash-block-size",), spec.block_size),
            ("ddtree_budget", ("--speculative-ddtree-budget",), spec.ddtree_budget),
            ("num_steps", ("--speculative-num-steps",), spec.num_steps),
            ("eagle_topk", ("--speculative-eagle-topk",), spec.eagle_topk),
            ("draft_window_size", ("--speculative-draft-window-size",), spec.draft_window_size),
            (
                "draft_attention_backend",
                ("--speculative-draft-attention-backend",),
                spec.draft_attention_backend,
            ),
        ]
        for key, names, value in optional:
            if value is not None:
                b.add(("speculative", key), names, value)
    return b


def analyze(recipe: Recipe, catalog: Catalog) -> Rendered:
    """The argv of `recipe` and every problem with it (errors and warnings)."""
    b = _structured(recipe, catalog)
    issues = list(b.issues)
    argv = [tok for _loc, toks in b.items for tok in toks]

    # Structured options are checked too: a value can be outside an option's choices.
    _parsed, own = check_argv(argv, catalog)
    token_loc: list[Loc] = [loc for loc, toks in b.items for _ in toks]
    for p in own:
        rule = "deprecated-option" if p.severity == "warning" else "option-value"
        issues.append(Issue(token_loc[p.index], p.severity, p.message, rule))

    extra = recipe.server.extra_args
    parsed, problems = check_argv(extra, catalog)
    for p in problems:
        rule = "deprecated-option" if p.severity == "warning" else "extra-args"
        issues.append(Issue(("server", "extra_args", p.index), p.severity, p.message, rule))
    set_by: dict[str, Loc] = {}
    for loc, toks in b.items:
        opt = catalog.find(toks[0])
        if opt is not None:
            set_by.setdefault(opt.dest, loc)
    seen: dict[str, int] = {}
    for arg in parsed:
        dest = arg.option.dest
        refused = _refused_in_extra_args(arg.spelling, dest, set_by)
        if refused is not None:
            issues.append(
                Issue(("server", "extra_args", arg.index), "error", refused, "extra-args")
            )
        elif dest in seen:
            issues.append(
                Issue(
                    ("server", "extra_args", arg.index),
                    "error",
                    f"'{arg.spelling}' repeats server.extra_args[{seen[dest]}]",
                    "extra-args",
                )
            )
        seen.setdefault(dest, arg.index)
    return Rendered(argv=[*argv, *extra], issues=issues, origins=b.items)


def _refused_in_extra_args(spelling: str, dest: str, set_by: dict[str, Loc]) -> str | None:
    """Why server.extra_args may not carry option `dest`, or None when it may."""
    if dest in set_by:
        where = ".".join(str(x) for x in set_by[dest])
        return f"'{spelling}' is already set by {where}; change it there"
    if dest in OWNED_BY_FIELD:
        return f"'{spelling}' belongs to {OWNED_BY_FIELD[dest]}; set it there"
    if dest in HIDDEN_BY_FILE:
        return f"'{spelling}' is not taken in server.extra_args: {HIDDEN_BY_FILE[dest]}"
    return None


def render_server_argv(recipe: Recipe, catalog: Catalog) -> list[str]:
    """The argv after `python3 -m sglang.launch_server`; raises `RecipeError` on any error."""
    rendered = analyze(recipe, catalog)
    errors = [i for i in rendered.issues if i.severity == "error"]
    if errors:
        lines = []
        for issue in errors:
            shown, path = locate(recipe, issue.loc)
            lines.append(f"{shown}: {path}: {issue.message}")
        raise RecipeError.from_problems(lines, hint="`repro recipe check` lists every problem")
    return rendered.argv


def render_node_argv(
    recipe: Recipe,
    catalog: Catalog,
    *,
    node_rank: str,
    dist_init_addr: str,
    nnodes: str | None = None,
    literal: Callable[[str], str] = str,
) -> list[str]:
    """The argv of one node of a multi-node deployment (`topology.nodes` > 1).

    SGLang's multi-node options (`--nnodes`, `--node-rank`, `--dist-init-addr`; mirrors
    sglang/srt/server_args.py) with values the cluster fills in per node: a placeholder such
    as `$(LWS_WORKER_INDEX)` or `"$SLURM_NODEID"` is passed through as given. `nnodes`
    replaces the `--nnodes` value (e.g. `$(LWS_GROUP_SIZE)`); by default it stays `nodes`.
    `literal` escapes the recipe's own arguments for the cluster (Kubernetes' `$$`), not the
    placeholders.
    """
    if recipe.topology.nodes < 2:
        raise RecipeError(
            f"{recipe.name}: topology.nodes is {recipe.topology.nodes}; "
            "per-node options are for multi-node recipes"
        )
    argv = [literal(arg) for arg in render_server_argv(recipe, catalog)]
    nnodes_flag = catalog.first("--nnodes")
    rank_flag = catalog.first("--node-rank")
    addr_flag = catalog.first("--dist-init-addr", "--nccl-init-addr")
    if nnodes_flag is None or rank_flag is None or addr_flag is None:
        raise RecipeError(
            f"the image's SGLang {catalog.sglang_version} catalog has no multi-node options "
            "(--nnodes, --node-rank, --dist-init-addr)"
        )
    parsed, _problems = check_argv(recipe.server.extra_args, catalog)
    for arg in parsed:
        if arg.option.dest in ("node_rank", "dist_init_addr", "nnodes"):
            shown, path = locate(recipe, ("server", "extra_args", arg.index))
            raise RecipeError(
                f"{shown}: {path}: '{arg.spelling}' is set per node by the exporter; remove it"
            )
    at = argv.index(nnodes_flag)
    if nnodes is not None:
        argv[at + 1] = nnodes
    argv[at + 2 : at + 2] = [rank_flag, node_rank, addr_flag, dist_init_addr]
    return argv


def render_env(recipe: Recipe) -> dict[str, str]:
    """The server's environment: `env`, SGLang's forced acceptance when the recipe asks for it,
    and the simulator's settings for simulated recipes."""
    env = dict(recipe.env)
    forced = recipe.speculative.forced_acceptance if recipe.speculative else None
    if forced is not None:
        env.update(forced.env())
    if recipe.simulator is not None:
        sim = recipe.simulator
        env[SIM_PROFILE.name] = sim.profile
        env[SIM_LOAD_SECONDS.name] = _value(sim.load_seconds)
        env[SIM_SEED.name] = str(sim.seed)
    return env


def render_command(recipe: Recipe, catalog: Catalog) -> list[str]:
    """The whole server command as a list: `python3 -m sglang.launch_server` + argv."""
    return [*LAUNCH, *render_server_argv(recipe, catalog)]


def render_shell(recipe: Recipe, catalog: Catalog) -> str:
    """A command a user can paste into a shell: env prefix, one option per line, quoted."""
    argv = render_server_argv(recipe, catalog)
    env = render_env(recipe)
    groups: list[list[str]] = []
    for token in argv:
        if (token.startswith("-") and not is_number(token)) or not groups:
            groups.append([token])
        else:
            groups[-1].append(token)
    head = " ".join(f"{k}={word(v)}" for k, v in env.items())
    first = words(LAUNCH)
    lines = [f"{head} {first}" if head else first]
    lines += ["  " + words(group) for group in groups]
    return " \\\n".join(lines)


def render_compose(recipe: Recipe, catalog: Catalog) -> dict[str, Any]:
    """The server service's command and environment for a compose file (command as a list)."""
    return {
        "command": render_command(recipe, catalog),
        "environment": render_env(recipe),
        "x-repro": {"recipe": recipe.name, "image_spec": recipe.image},
    }
