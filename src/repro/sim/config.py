"""From argv + environment + profile to the simulator's settings.

The command line is SGLang's (see server_argparser.py); simulator-only knobs come from the
environment so that a rendered argv stays valid for real SGLang:

  REPRO_SIM_PROFILE             profile name or path (default: demo)
  REPRO_SIM_SEED                seed of generated text and acceptance draws
                                (default: --random-seed, else 0)
  REPRO_SIM_TIME_SCALE          multiplies every simulated duration (0 = no waiting at all)
  REPRO_SIM_LOAD_SECONDS        imitated weight loading: /health* answer 503 meanwhile
  REPRO_SIM_FAIL_AT_START       non-empty: fail during start-up (exit 1) with a log line
  REPRO_SIM_EXIT_AFTER_SECONDS  crash this many seconds after start
  REPRO_SIM_EXIT_CODE           exit code of that crash (default 1)
  REPRO_SIM_TRACE_FILE          append one JSON line per finished HTTP request (see below)
  REPRO_SIM_CATALOG             another option catalog JSON (default: the one repro ships
                                for the source tree's SGLang version, else 0.5.23's)
  REPRO_SIM_LOSSY_DRAFTER       non-empty: the drafter is lossy (accepted drafts differ from
                                the target's greedy tokens), to test a lossless check
  REPRO_SIM_ANSWER_KEY          questions with answers the simulator gives (sim/answers.py)
  REPRO_SIM_WRONG_ANSWERS       the share of those it answers wrongly (a planted regression)

SGLang's own SGLANG_SIMULATE_ACC_LEN, _METHOD and _TOKEN_MODE force the acceptance of a
speculative server as SGLang 0.5.23 does (sim/forced.py).

A trace line is `{"rid", "endpoint", "stream", "received": <epoch s>, "prompt_tokens",
"completion_tokens", "finish_reason", "aborted", "chunks": [{"t": <epoch s just after the
chunk was handed to the socket>, "tokens": <new tokens in it>}, ...]}`; a plain (non-stream)
request has one chunk, its response. A benchmark client compares its own receive times to it.

Speculative settings are resolved as SGLang's hooks do (sglang/srt/arg_groups/
speculative_hook.py: DFLASH forces num_steps/topk to 1, takes `--speculative-dflash-block-size`
as the draft tokens and refuses a disagreeing `--speculative-num-draft-tokens`, needs a draft
model and pp_size 1; DDTREE (PR #29907) reuses the DFlash drafter and verifies budget + 1
tokens per step, budget defaulting to block_size - 1). A speculative server started without
`--max-running-requests` runs at most SPECULATIVE_MAX_RUNNING (48) requests and reports that
in /server_info, as speculative_hook.py's handlers reset it for every algorithm.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from repro.sim.answers import AnswerKey, key_from_env
from repro.sim.forced import ForcedAcceptance, forced_from_env
from repro.sim.profile import (
    CATEGORIES,
    DrafterProfile,
    Profile,
    SpecProfile,
    accept_cdf,
    load_profile,
)
from repro.sim.registry import Registry, load_registry
from repro.sim.server_argparser import build_parser, load_catalog

EAGLE_FAMILY = ("EAGLE", "EAGLE3", "STANDALONE", "FROZEN_KV_MTP")
SPECULATIVE_MAX_RUNNING = 48  # speculative_hook.py, e.g. _handle_dflash
DFLASH_FAMILY = ("DFLASH", "DDTREE")
_SECRET_DESTS = ("api_key", "admin_api_key")


class StartupError(ValueError):
    """A configuration SGLang refuses at start-up (it raises ValueError: exit code 1)."""


@dataclass
class SimConfig:
    args: argparse.Namespace
    argv: list[str]
    profile: Profile
    registry: Registry
    catalog_path: str
    algorithm: str | None = None
    spec: SpecProfile | None = None
    drafter: DrafterProfile | None = None  # the profile's entry for this drafter repo, if any
    lossy_drafter: bool = False
    forced: ForcedAcceptance | None = None  # SGLANG_SIMULATE_ACC_LEN on a speculative server
    draft_tokens: int = 0  # speculative_num_draft_tokens
    answer_key: AnswerKey | None = None  # scripted answers (sim/answers.py)
    verify_tokens: int = 1  # tokens the target verifies per request and step
    accept_cap: int = 0  # most drafts one step can accept
    accept_cdfs: dict[str, list[float]] = field(default_factory=dict)
    served_model_name: str = ""
    context_length: int = 32768
    max_running_requests: int = 256  # per DP rank
    kv_tokens: int = 1_000_000  # per DP rank
    dp_size: int = 1
    cuda_graph: bool = True
    seed: int = 0
    time_scale: float = 1.0
    load_seconds: float = 0.0
    fail_at_start: str = ""
    exit_after: float | None = None
    exit_code: int = 1
    trace_file: str | None = None
    warnings: list[str] = field(default_factory=list)
    _context_cdfs: dict[tuple[str, int, int, float], list[float]] = field(
        default_factory=dict, repr=False
    )

    def accept_cdf_for(self, category: str, prompt_tokens: int) -> list[float] | None:
        """A request's acceptance CDF: its category's, scaled at its context length when the
        drafter's entry has a `context_scale`; None without speculative decoding."""
        if not self.algorithm:
            return None
        drafter = self.drafter
        if drafter is None or not drafter.context_scale or self.spec is None:
            return self.accept_cdfs.get(category)
        factor = round(drafter.context_factor(prompt_tokens), 3)
        key = (category, self.accept_cap, self.verify_tokens, factor)
        cdf = self._context_cdfs.get(key)
        if cdf is None:
            cdf = accept_cdf(self.spec, category, self.accept_cap, self.verify_tokens, factor)
            self._context_cdfs[key] = cdf
        return cdf

    @property
    def eos_token_id(self) -> int:
        return int(self.profile.model.get("eos_token_id", 2))

    def server_args(self) -> dict[str, Any]:
        """The resolved arguments, as /server_info reports them (secrets redacted)."""
        values = {k: _jsonable(v) for k, v in vars(self.args).items() if k != "config"}
        for dest in _SECRET_DESTS:
            if values.get(dest):
                values[dest] = "<redacted>"
        values.update(
            served_model_name=self.served_model_name,
            tokenizer_path=self.args.tokenizer_path or self.args.model_path,
            context_length=self.context_length,
            max_running_requests=self.max_running_requests * self.dp_size,
            max_total_tokens=self.kv_tokens,
            random_seed=self.seed,
            speculative_algorithm=self.algorithm,
        )
        if self.algorithm:
            values["speculative_num_draft_tokens"] = self.draft_tokens
            if self.algorithm in DFLASH_FAMILY:
                values.update(speculative_num_steps=1, speculative_eagle_topk=1)
            if self.algorithm == "DDTREE":
                values["speculative_ddtree_budget"] = self.verify_tokens - 1
        return values

    def launch_command(self) -> str:
        redacted, hide = [], False
        for arg in self.argv:
            redacted.append("<redacted>" if hide else arg)
            hide = arg in ("--api-key", "--admin-api-key")
        return shlex.join(["python3", "-m", "sglang.launch_server", *redacted])


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except TypeError:
        return str(value)


def _env_float(env: Mapping[str, str], name: str, default: float | None) -> float | None:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise StartupError(f"{name}={raw!r} is not a number") from None


def _local_block_size(drafter: str | None) -> int | None:
    """A local drafter folder's DFlash block size, read as speculative_hook.py reads it
    (parse_dflash_draft_config: `dflash_config.block_size`, else the top-level key)."""
    path = Path(drafter or "") / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8")) if drafter else None
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    nested = config.get("dflash_config")
    value = (nested if isinstance(nested, dict) else {}).get("block_size", config.get("block_size"))
    return value if isinstance(value, int) and value > 0 else None


def _speculative(cfg: SimConfig, parser: argparse.ArgumentParser, env: Mapping[str, str]) -> None:
    args = cfg.args
    name = args.speculative_algorithm
    if name is None:
        return
    algorithm = cfg.registry.resolve(name)
    if algorithm is None:
        # real 0.5.23 raises "Unknown speculative algorithm name" from SpeculativeAlgorithm
        # .from_string (spec_info.py); reported argparse-style here, exit code 2
        parser.error(
            f"argument --speculative-algorithm: invalid choice: {name!r} (Unknown speculative "
            f"algorithm name: {name}; registered: {', '.join(cfg.registry.accepted())})"
        )
    if algorithm == "NONE":
        return
    cfg.algorithm = algorithm
    spec = cfg.profile.spec(algorithm)
    drafter = cfg.drafter = cfg.profile.drafter(args.speculative_draft_model_path)
    if drafter is not None and drafter.accept_length:
        spec = replace(spec, accept_length=dict(drafter.accept_length))
    cfg.lossy_drafter = bool(env.get("REPRO_SIM_LOSSY_DRAFTER", "").strip()) or bool(
        drafter and drafter.lossy
    )
    cfg.spec = spec
    num_draft = args.speculative_num_draft_tokens
    if algorithm in DFLASH_FAMILY:
        if args.pp_size != 1:
            raise StartupError("Currently DFLASH speculative decoding only supports pp_size == 1.")
        if args.speculative_draft_model_path is None:
            raise StartupError(
                "DFLASH speculative decoding requires setting --speculative-draft-model-path."
            )
        block = args.speculative_dflash_block_size
        if block is not None:
            if block <= 0:
                raise StartupError(
                    f"DFLASH requires --speculative-dflash-block-size to be positive, got {block}."
                )
            if num_draft is not None and num_draft != block:
                raise StartupError(
                    "Both --speculative-num-draft-tokens and --speculative-dflash-block-size "
                    "are set but they differ. For DFLASH they must match. "
                    f"speculative_num_draft_tokens={num_draft}, "
                    f"speculative_dflash_block_size={block}."
                )
            num_draft = block
        if num_draft is None:
            num_draft = _local_block_size(args.speculative_draft_model_path)
            source = "its config.json"
            if num_draft is None:
                num_draft, source = (
                    spec.default_draft_tokens,
                    f"simulator profile {cfg.profile.name}",
                )
            cfg.warnings.append(
                f"speculative_num_draft_tokens is not set; using the drafter's block_size "
                f"{num_draft} ({source})."
            )
    elif num_draft is None:
        num_draft = spec.default_draft_tokens
    cfg.draft_tokens = max(1, int(num_draft))
    cfg.accept_cap = cfg.draft_tokens - 1
    cfg.verify_tokens = cfg.draft_tokens
    if algorithm in EAGLE_FAMILY and args.speculative_num_steps:
        cfg.accept_cap = min(cfg.accept_cap, int(args.speculative_num_steps))
    if algorithm == "DDTREE":
        budget = getattr(args, "speculative_ddtree_budget", None)
        budget = cfg.draft_tokens - 1 if budget is None else int(budget)
        if budget < 0:
            raise StartupError(f"DDTree tree_budget must be non-negative, got {budget}")
        cfg.verify_tokens = budget + 1
        cfg.accept_cap = min(cfg.accept_cap, budget)
    cfg.accept_cdfs = {
        c: accept_cdf(spec, c, cfg.accept_cap, cfg.verify_tokens) for c in CATEGORIES
    }
    try:
        cfg.forced, warning = forced_from_env(env)
    except ValueError as e:
        raise StartupError(str(e)) from None
    if warning:
        cfg.warnings.append(warning)


def resolve(
    argv: list[str],
    *,
    profile: Profile | None = None,
    registry: Registry | None = None,
    env: Mapping[str, str] | None = None,
    catalog: dict[str, Any] | None = None,
) -> SimConfig:
    """Parse SGLang's argv (argparse exits 2 on a bad one) and resolve the simulation.

    `profile` and `registry` replace the environment's and the installed SGLang's, for
    evaluating a profile's timing model outside a server (sim/calibration.py); `env` replaces
    this process's environment (the server's, as a recipe renders it, for a prediction);
    `catalog` the source tree's (the image's, for a prediction)."""
    env = os.environ if env is None else env
    catalog = catalog if catalog is not None else load_catalog()
    builtin = list(catalog.get("builtin_speculative_algorithms") or [])
    registry = registry or load_registry(
        builtin, f"SGLang {catalog.get('sglang_version', '?')} catalog"
    )
    parser = build_parser(catalog, registry.names)
    args = parser.parse_args(argv)
    if not args.model_path:
        parser.error("the following arguments are required: --model-path/--model")
    profile = profile or load_profile()
    cfg = SimConfig(
        args=args,
        argv=list(argv),
        profile=profile,
        registry=registry,
        catalog_path=str(catalog.get("_path")),
    )
    timing = profile.timing
    cfg.served_model_name = args.served_model_name or args.model_path
    cfg.context_length = int(args.context_length or profile.model.get("context_length") or 32768)
    cfg.dp_size = max(1, int(args.dp_size or 1))
    if args.max_running_requests:
        cfg.max_running_requests = max(1, int(args.max_running_requests) // cfg.dp_size)
    else:
        cfg.max_running_requests = timing.max_running_requests
    if args.max_total_tokens:
        cfg.kv_tokens = int(args.max_total_tokens)
    else:
        fraction = args.mem_fraction_static or timing.mem_fraction_static
        cfg.kv_tokens = int(timing.kv_tokens * fraction / timing.mem_fraction_static)
    cfg.cuda_graph = not (
        getattr(args, "disable_cuda_graph", False)
        or getattr(args, "disable_decode_cuda_graph", False)
        or getattr(args, "cuda_graph_backend_decode", None) == "disabled"
    )
    for size, stated in profile.deployment.items():
        if size.endswith("_size") and getattr(args, size, stated) != stated:
            cfg.warnings.append(
                f"simulator profile {profile.name} states {size}={stated}; this server has "
                f"{size}={getattr(args, size)}, and its timing still follows the profile."
            )
    if getattr(args, "config", None):
        cfg.warnings.append("--config is not read by the simulator; pass the options instead.")
    seed = _env_float(env, "REPRO_SIM_SEED", None)
    cfg.seed = int(seed) if seed is not None else int(getattr(args, "random_seed", 0) or 0)
    cfg.time_scale = max(0.0, _env_float(env, "REPRO_SIM_TIME_SCALE", 1.0) or 0.0)
    cfg.load_seconds = max(0.0, _env_float(env, "REPRO_SIM_LOAD_SECONDS", 0.0) or 0.0)
    cfg.fail_at_start = env.get("REPRO_SIM_FAIL_AT_START", "").strip()
    cfg.exit_after = _env_float(env, "REPRO_SIM_EXIT_AFTER_SECONDS", None)
    cfg.exit_code = int(_env_float(env, "REPRO_SIM_EXIT_CODE", 1) or 0)
    cfg.trace_file = env.get("REPRO_SIM_TRACE_FILE") or None
    try:
        cfg.answer_key = key_from_env(env)
    except ValueError as e:
        raise StartupError(str(e)) from None
    _speculative(cfg, parser, env)
    if cfg.algorithm and not args.max_running_requests:
        args.max_running_requests = SPECULATIVE_MAX_RUNNING
        cfg.max_running_requests = max(1, SPECULATIVE_MAX_RUNNING // cfg.dp_size)
        cfg.warnings.append(
            "Max running requests is reset to 48 for speculative decoding. You can override "
            "this by explicitly setting --max-running-requests."
        )
    return cfg
