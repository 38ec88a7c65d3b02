"""The engine dry-start: SGLang's own start-up logic on a recipe, before any GPU is rented.

A recipe's rendered argv goes through the start-up code of the SGLang its image pins (see
drystart_probe.py for the steps), with two things put in place, each said in the result:
the model and drafter are their tiny twins (`repro image tiny-model --like`), and an
algorithm a patch set adds runs as the builtin it builds on when that release's wheel lacks
the patch. The engines are SGLang 0.5.23's CPU engine (`.venv-sglang`, scripts/ensure-sglang)
and, laid over it, the start-up code of each other release an image stands on
(`.venv-sglang/releases/X`, from releases/sglang-X.txt). Where SGLang refuses, the refusal is
mapped back to the recipe field whose option it names.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from repro.errors import ReproError
from repro.lock.draft_tokens import drafter_block_size
from repro.realengine.patched_release import Applied, apply_patch_set, site_packages_package
from repro.realengine.probe_process import run_engine
from repro.recipe.argv_check import ParsedArg, check_argv
from repro.recipe.findings import Finding, Loc
from repro.recipe.hardware import gpu_model
from repro.recipe.images import patches_dir_for
from repro.recipe.loader import locate_for_user
from repro.recipe.render import HIDDEN_BY_FILE, OWNED_BY_FIELD, analyze, render_env
from repro.safetext import clean
from repro.schema.drystart import DryStart
from repro.schema.image import ImageSpec
from repro.schema.lock import Lock, Locked
from repro.schema.option_catalog import Catalog, CatalogOption
from repro.schema.recipe import Recipe

RELEASES = Path(__file__).with_name("releases")
# The release .venv-sglang itself is; the others are laid over it from RELEASES.
BASE_RELEASE = "0.5.23"
# What the probe keeps of the user's environment: enough for a Python and torch to start.
HOST_VARIABLES = frozenset(
    {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"}
)
# SGLang variables whose value names a location or code (a path, a package, a host): a
# recipe's env does not reach the dry-start with them.
LOCATION_WORDS = (
    "PATH",
    "DIR",
    "FILE",
    "PACKAGE",
    "PLUGIN",
    "MODULE",
    "CLASS",
    "URL",
    "HOST",
    "ENDPOINT",
    "ADDR",
    "SOCKET",
)
PLAIN_VALUE = re.compile(r"[A-Za-z0-9_.,:+-]*")
# A patch's algorithm and the builtin whose worker it extends, for a release whose wheel lacks
# the patch: DDTree's DDTreeWorker subclasses DFlashWorkerV2 and reuses the DFlash drafter
# (sgl-project/sglang#29907, python/sglang/srt/speculative/ddtree_worker.py).
PATCHED_ALGORITHM_BASE = {"DDTREE": "DFLASH"}


@dataclass(frozen=True)
class Engine:
    """The Python that runs one release's start-up code, and what it lays over its packages."""

    version: str
    python: Path
    overlay: Path | None
    # The image's patch set applied over the release (patched_release.py), first on the path
    patched: Applied | None = None

    def env(self, home: Path) -> dict[str, str]:
        """The probe's environment: the few host variables a Python needs, a home of its own
        (no Hub token, no cache, no config of the user's), and the release's packages. The
        probe forces the Hub offline itself (drystart_probe.OFFLINE)."""
        env = {k: v for k, v in os.environ.items() if k in HOST_VARIABLES}
        env.update(HOME=str(home), HF_HOME=str(home / "hf"), XDG_CACHE_HOME=str(home / "cache"))
        first = self.patched.folder if self.patched else None
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (first, self.overlay) if p)
        return env


@dataclass(frozen=True)
class Target:
    """One recipe to dry-start: what it renders to, and the twins that stand for its models."""

    recipe: Recipe
    catalog: Catalog
    image: ImageSpec | None
    model_dir: Path
    drafter_dir: Path | None
    lock: Lock | None = None  # where the drafter's config.json was read: its block size

    def gpu(self) -> dict[str, object] | None:
        """The recipe's GPU as the probe's stand-in answers for it (drystart_probe.py's
        ``_as_recipe_gpu``): the first model the topology names, its memory the topology's
        floor (else the model's own size). None for a recipe that runs on no GPU."""
        topology = self.recipe.topology
        if topology.gpu_runtime == "none" or not topology.gpu_models:
            return None
        model = gpu_model(topology.gpu_models[0])
        if model is None:
            return None
        gb = topology.min_gpu_memory_gb or model.memory_gb
        major, minor = model.arch.split(".")
        cuda = self.image.cuda_version if self.image is not None else None
        return {
            "sm": int(major) * 10 + int(minor),
            "memory_mib": round((gb or 80) * 1e9 / 2**20),
            "cuda": cuda or "13.0",
            "name": model.name,
        }


def engine_for(version: str, python: Path) -> Engine | None:
    """The engine for release `version`, when scripts/ensure-sglang has made it."""
    if not python.is_file():
        return None
    if version == BASE_RELEASE:
        return Engine(version, python, None)
    overlay = python.parent.parent / "releases" / version
    if (overlay / "sglang").is_dir():
        return Engine(version, python, overlay)
    return None


def known_releases() -> list[str]:
    """Every release the engines cover, the base first."""
    others = sorted(p.stem.removeprefix("sglang-") for p in RELEASES.glob("sglang-*.txt"))
    return [BASE_RELEASE, *others]


def missing_engine_line(version: str) -> str:
    """The one line `recipe check` says when a recipe's release has no engine here."""
    if version not in known_releases():
        return (
            f"engine dry-start not run: repro has no start-up code of SGLang {version} "
            f"(it covers {', '.join(known_releases())})"
        )
    return (
        f"engine dry-start not run: SGLang {version}'s start-up code is not installed; "
        "`make sglang-engine` (scripts/ensure-sglang) installs it"
    )


def _free_text(option: CatalogOption) -> bool:
    """Whether an option's value is free text SGLang may open, import or fetch (a path, a
    module, a host): neither a number, a flag, JSON nor one of fixed choices."""
    return option.arity[1] != 0 and not option.choices and option.type in (None, "str")


def _tokens(argv: Sequence[str], arg: ParsedArg) -> list[str]:
    """The tokens of one parsed option occurrence (`--x=v` is one)."""
    head = argv[arg.index]
    inline = head.startswith("--") and "=" in head
    return list(argv[arg.index : arg.index + (1 if inline else 1 + len(arg.values))])


def dry_argv(
    target: Target, engine_version: str, patched: Applied | None = None
) -> tuple[list[str], list[str]]:
    """The argv the start-up code gets, and one line per stand-in put into it and per option
    left out. No path, module or host the recipe chose reaches SGLang: the model and drafter
    are the twins, remote code stays off, and free-text options of server.extra_args are
    left out (the recipe rules refuse those a structured field owns)."""
    catalog = target.catalog
    gpu = target.gpu()
    stand_ins = [f"model: the twin at {target.model_dir.name}"]
    if gpu is not None:
        stand_ins.append(
            f"GPU: SGLang's device queries answered for one {gpu['name']} (sm_{gpu['sm']}, "
            f"{gpu['memory_mib']} MiB, CUDA {gpu['cuda']}); no GPU is used"
        )
    twins = {"model_path": target.model_dir, "speculative_draft_model_path": target.drafter_dir}
    argv: list[str] = []
    left_out: list[str] = []
    for _loc, tokens in analyze(target.recipe, catalog).origins:
        option = catalog.find(tokens[0])
        dest = option.dest if option is not None else ""
        if dest == "trust_remote_code":
            stand_ins.append("remote code: off (--trust-remote-code left out; the twins need none)")
            continue
        if dest in twins:
            twin = twins[dest]
            if twin is None:
                left_out.append(f"{tokens[0]} (no twin stands for it)")
                continue
            tokens = [tokens[0], str(twin)]
        argv += tokens
    if target.drafter_dir is not None:
        block = drafter_block_size(target.recipe, target.lock)
        size = f", block size {block.label()}" if block is not None else ""
        stand_ins.append(f"drafter: the twin at {target.drafter_dir.name}{size}")
    extra = target.recipe.server.extra_args
    parsed, _problems = check_argv(extra, catalog)
    for arg in parsed:
        dest = arg.option.dest
        if _free_text(arg.option) or dest in OWNED_BY_FIELD or dest in HIDDEN_BY_FILE:
            left_out.append(f"{arg.spelling} (server.extra_args[{arg.index}])")
            continue
        argv += _tokens(extra, arg)
    if left_out:
        stand_ins.append(
            "left out, as values the check does not open, import or reach: " + ", ".join(left_out)
        )
    provides = target.image.provides if target.image is not None else None
    patch_set = target.image.patch_set if target.image is not None else None
    unapplied = (
        patched.line if patched else f"patch set {patch_set.name if patch_set else '?'} not applied"
    )
    if patched is not None and patched.folder is not None:
        stand_ins.append(patched.line)
    elif provides is not None and (provides.speculative_algorithms or provides.options):
        dropped = {o.name for o in provides.options}
        kept: list[str] = []
        skip = False
        for token in argv:
            if skip:
                skip = False
                continue
            if token in dropped:
                skip = True
                continue
            kept.append(PATCHED_ALGORITHM_BASE.get(token, token))
        if kept != argv:
            swapped = [f"{a} as {b}" for a, b in PATCHED_ALGORITHM_BASE.items() if a in argv]
            stand_ins.append(
                f"{unapplied} (the {engine_version} wheel has no copy of it), so instead: "
                f"{', '.join(swapped) or 'its options'} without "
                f"{', '.join(sorted(dropped & set(argv)))}; its declared constraints are "
                "checked by the recipe rules"
            )
        argv = kept
    if patched is not None and patched.folder is None and unapplied not in " ".join(stand_ins):
        stand_ins.append(f"{unapplied}; the release's own start-up code ran instead")
    if "--device" not in argv:
        argv += ["--device", "cuda"]
    return argv, stand_ins


def dry_env(recipe: Recipe, catalog: Catalog) -> tuple[dict[str, str], list[str]]:
    """The environment the start-up code gets from the recipe, and the names left out: only
    SGLang's own variables (in the image's catalog) with plain values, none that names a
    location or code. The Hub stays offline whatever the recipe says (the probe forces it)."""
    known = set(catalog.env)
    kept: dict[str, str] = {}
    left_out: list[str] = []
    for name, value in render_env(recipe).items():
        if (
            name.startswith("SGLANG_")
            and name in known
            and PLAIN_VALUE.fullmatch(value)
            and not any(word in name for word in LOCATION_WORDS)
        ):
            kept[name] = value
        elif name in recipe.env:
            left_out.append(name)
    return kept, left_out


def one_line(text: object) -> str:
    """Foreign text (SGLang's messages) made safe, on one line."""
    return " ".join(clean(text).split())


def dry_start(targets: Sequence[Target], engine: Engine) -> list[DryStart]:
    """Dry-start every target on `engine` (one process), in order."""
    argvs = [dry_argv(t, engine.version, engine.patched) for t in targets]
    envs = [dry_env(t.recipe, t.catalog) for t in targets]
    for (_argv, stand_ins), (_env, left_out) in zip(argvs, envs, strict=True):
        if left_out:
            stand_ins.append(
                "env left out (SGLang's own plain variables only; the Hub stays offline): "
                + ", ".join(left_out)
            )
    requests: list[dict[str, object]] = [
        {"argv": argv, "env": env, "gpu": t.gpu()}
        for t, (argv, _), (env, _) in zip(targets, argvs, envs, strict=True)
    ]
    results = []
    answers = run_engine(engine.python, engine.version, engine.env, requests)
    for target, (_argv, stand_ins), raw in zip(targets, argvs, answers, strict=True):
        data = _portable(target, raw if isinstance(raw, dict) else {})
        notes = data.get("notes")
        shown = {
            "sglang_version": str(data.get("sglang_version") or engine.version),
            "engine": f"SGLang {engine.version}'s start-up code on the CPU",
            "stand_ins": stand_ins,
            "refused": data.get("failed"),
            "changed": data.get("changed") or {},
            "model": data.get("model"),
            "drafter": data.get("drafter"),
            "notes": [one_line(n) for n in notes] if isinstance(notes, list) else [],
        }
        results.append(DryStart.model_validate(shown))
    return results


def _portable(target: Target, data: dict[str, Any]) -> dict[str, Any]:
    """The probe's answer without what differs from one host or run to the next: the twins'
    folders (named by the repository they stand for) and the seed SGLang draws at random."""
    text = json.dumps(data)
    twins = [(target.model_dir, target.recipe.model.repo)]
    if target.drafter_dir is not None and target.recipe.drafter is not None:
        twins.append((target.drafter_dir, target.recipe.drafter.repo))
    for folder, repo in twins:
        text = text.replace(json.dumps(str(folder))[1:-1], f"<twin of {repo}>")
    portable: dict[str, Any] = json.loads(text)
    changed = portable.get("changed")
    if isinstance(changed, dict):
        changed.pop("random_seed", None)
    return portable


def _words(text: str) -> str:
    return " " + re.sub(r"[^a-z0-9]+", " ", text.lower()) + " "


def refusal_field(target: Target, result: DryStart) -> Loc:
    """The recipe field whose option SGLang's refusal names first: by its spelling or its dest
    in words, else by its value (such as the algorithm); else the server as a whole."""
    assert result.refused is not None
    said = _words(result.refused.message)
    rendered = analyze(target.recipe, target.catalog)
    options: list[tuple[Loc, tuple[str, ...]]] = []
    values: list[tuple[Loc, tuple[str, ...]]] = []
    for loc, tokens in rendered.origins:
        option = target.catalog.find(tokens[0])
        names = option.options if option is not None else (tokens[0],)
        options.append((loc, (*names, option.dest if option is not None else "")))
        values.append((loc, tuple(tokens[1:])))
    parsed, _ = check_argv(target.recipe.server.extra_args, target.catalog)
    for arg in parsed:
        loc = ("server", "extra_args", arg.index)
        options.append((loc, (*arg.option.options, arg.option.dest)))
        values.append((loc, arg.values))
    for candidates in (options, values):
        found = [
            (said.find(words), n, loc)
            for n, (loc, names) in enumerate(candidates)
            for words in (_words(name.removeprefix("--").removeprefix("enable_")) for name in names)
            if len(words.strip()) > 2 and words in said
        ]
        if found:  # the one the message names first: the subject of SGLang's sentence
            return min(found, key=lambda hit: (hit[0], hit[1]))[2]
    return ("server",)


def _owned_hint(target: Target, said: str) -> str:
    """`; parallelism.dp_lm_head renders --enable-dp-lm-head`: the recipe field of each
    option SGLang's message asks for, where a field owns it."""
    fields = {}
    for spelling in re.findall(r"--[a-z0-9][a-z0-9-]*", said):
        option = target.catalog.find(spelling)
        if option is not None and option.dest in OWNED_BY_FIELD:
            fields[spelling] = OWNED_BY_FIELD[option.dest]
    return "".join(f"; {field} renders {spelling}" for spelling, field in fields.items())


def findings(target: Target, result: DryStart) -> list[Finding]:
    """`recipe check`'s lines for one dry start: SGLang's refusal on the field it names."""
    if result.refused is None:
        return []
    refused = result.refused
    shown, path, context = locate_for_user(target.recipe, refusal_field(target, result))
    where = f" ({refused.where})" if refused.where else ""
    where += context + _owned_hint(target, refused.message)
    if refused.step == "deadline":
        message = f"SGLang {result.sglang_version}'s start-up code {one_line(refused.message)}"
    else:
        message = (
            f"SGLang {result.sglang_version} refuses to start ({refused.step}): "
            f"{one_line(refused.message)}{where}"
        )
    return [Finding("error", shown, path, message, "engine-dry-start")]


@dataclass(frozen=True)
class EngineCheck:
    """A recipe's dry start: its result, or the one line saying why it did not run."""

    target: Target | None = None
    result: DryStart | None = None
    not_run: str | None = None


def _not_run(locked: Locked, python: Path) -> str | None:
    """Why `locked` cannot be dry-started here, or None when it can."""
    from repro.realengine.twins import TwinError, twin_for  # deferred: the Hub client

    image, catalog = locked.image_spec, locked.catalog
    if image is not None and image.simulated:
        return "engine dry-start not run: the image is repro's simulator, not SGLang"
    if catalog is None:
        return "engine dry-start not run: no option catalog for the recipe's image"
    if engine_for(catalog.sglang_version, python) is None:
        return missing_engine_line(catalog.sglang_version)
    try:
        twin_for(locked.recipe, locked.lock)
    except TwinError as err:
        return f"engine dry-start not run: {one_line(err.message)}"
    return None


def _patch_key(locked: Locked) -> str:
    """What tells apart the patched start-up code recipes need: their image's patch set."""
    spec = locked.image_spec
    return spec.patch_set.model_dump_json() if spec and spec.patch_set else ""


def _with_patch_set(engine: Engine, locked: Locked) -> Engine:
    """`engine` with the image's patch set applied over its release, where this machine has
    the patches (patched_release.py) and all are remote diffs pinned in the patch cache (put
    there by the user, held to their sha256); else `engine`, saying why."""
    spec = locked.image_spec
    if spec is None or spec.patch_set is None:
        return engine
    if spec.patch_set.local:  # the checked project's own files: a check runs none of them
        return replace(
            engine,
            patched=Applied(
                None,
                f"patch set {spec.patch_set.name} not applied: its local patches "
                f"({', '.join(spec.patch_set.local)}) are files of the checked project, whose "
                "code a check never runs; the release's own start-up code ran instead",
            ),
        )
    package = (
        (engine.overlay / "sglang") if engine.overlay else site_packages_package(engine.python)
    )
    if package is None:
        return engine
    applied = apply_patch_set(
        spec, patches_dir_for(locked.recipe, spec), engine.version, package, engine.python
    )
    return replace(engine, patched=applied)


def check_engines(lockeds: Sequence[Locked], python: Path) -> list[EngineCheck]:
    """Dry-start each recipe on its release's engine, in order: the twins made in one engine
    process, then one process per release (and GPU or not) for the start-ups."""
    from repro.realengine.twins import TwinError, ensure_all_twins

    checks = [EngineCheck(not_run=_not_run(locked, python)) for locked in lockeds]
    runnable = [i for i, check in enumerate(checks) if check.not_run is None]
    try:
        twins = ensure_all_twins(
            [lockeds[i].recipe for i in runnable],
            python=python,
            locks=[lockeds[i].lock for i in runnable],
        )
    except TwinError as err:
        line = f"engine dry-start not run: {one_line(err.message)}"
        return [EngineCheck(not_run=c.not_run or line) for c in checks]
    by_engine: dict[tuple[str, bool, str], list[int]] = {}
    for i, twin in zip(runnable, twins, strict=True):
        locked = lockeds[i]
        assert locked.catalog is not None
        target = Target(
            locked.recipe,
            locked.catalog,
            locked.image_spec,
            twin.model_dir,
            twin.drafter_dir,
            locked.lock,
        )
        checks[i] = EngineCheck(target=target)
        # a GPU stand-in stays for the process: recipes on no GPU get a process of their own
        key = (locked.catalog.sglang_version, target.gpu() is None, _patch_key(locked))
        by_engine.setdefault(key, []).append(i)
    for (version, _on_cpu, _patches), indexes in by_engine.items():
        engine = engine_for(version, python)
        assert engine is not None
        targets = [t for t in (checks[i].target for i in indexes) if t is not None]
        try:
            engine = _with_patch_set(engine, lockeds[indexes[0]])
        except ReproError as err:
            line = f"engine dry-start not run: {one_line(err.message)}"
            for i in indexes:
                checks[i] = EngineCheck(not_run=line)
            continue
        for i, result in zip(indexes, dry_start(targets, engine), strict=True):
            checks[i] = EngineCheck(target=checks[i].target, result=result)
    return checks


def _shown(value: object, width: int = 28) -> str:
    text = one_line(json.dumps(value) if not isinstance(value, str) else value)
    return text if len(text) <= width else text[: width - 3] + "..."


def resolved_lines(check: EngineCheck) -> list[str]:
    """`repro recipe render --resolved`: what SGLang's start-up made of the argv, as # lines
    under the command (each at most 80 columns, long values cut; --format json has them)."""
    if check.result is None:
        return [f"# {check.not_run}"]
    result = check.result
    lines = [f"# {result.engine}; stand-ins:"]
    lines += [f"#   {line}" for line in result.stand_ins]
    if result.refused is not None:
        refused = result.refused
        lines.append(f"# SGLang {result.sglang_version} refuses it at {refused.step}:")
        lines.append(f"#   {one_line(refused.message)} ({refused.where})")
        return lines
    lines.append(f"# resolved by SGLang {result.sglang_version} (option: asked -> resolved):")
    for name, value in sorted(result.changed.items()):
        by = f"  [{value.by}]" if value.by else ""
        lines.append(f"#   {name}: {_shown(value.asked, 12)} -> {_shown(value.resolved)}{by}")
    for role, found in (("model", result.model), ("drafter", result.drafter)):
        if found is not None:
            lines.append(f"# {role}: {found.architecture} ({found.model_class})")
            if found.dflash:
                lines.append(f"#   dflash: {one_line(json.dumps(found.dflash))}")
    lines += [f"# SGLang: {note}" for note in result.notes]
    return [
        part
        for line in lines
        for part in textwrap.wrap(line, 80, subsequent_indent="#     ", break_on_hyphens=False)
    ]
