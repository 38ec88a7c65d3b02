"""`repro image build|push|pull|verify|export|arch-check|tiny-model|catalog|bump|patch`:
pinned SGLang images, the option catalogs of SGLang releases, moving a spec to a newer
tag, and the cache of its remote patches."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from repro.cli.options import json_option, sglang_python_option
from repro.cli.patch import patch
from repro.doctor import collect_fingerprint
from repro.errors import ReproError
from repro.image import locked_image
from repro.image.build import build_image
from repro.image.buildplan import plan_for_spec
from repro.image.bump import Bump, bump_image
from repro.image.registry import export_archive, export_enroot
from repro.image.release_catalog import extract_release_catalog
from repro.lock import load_locked
from repro.recipe import load_recipe
from repro.recipe.images import list_image_specs, load_image_spec
from repro.recipe.placeholder import refuse_placeholder
from repro.schema.image import ImageSpec
from repro.schema.lock import Locked

_console = Console(stderr=True, highlight=False)


# what the twins are for, in one line of at most 80 columns
TWINS_FOR = "for: `repro recipe check` and serving tests; random weights, the text is noise"


def _say(message: str) -> None:
    _console.print(f"[dim]·[/] {escape(message)}")


def _names_image_spec(ref: str) -> bool:
    return ref in list_image_specs() or (ref.endswith((".yaml", ".yml")) and "images" in ref)


def _recipe_or_spec(ref: str) -> Locked | ImageSpec:
    """R as the image spec it names, else as a recipe (name, file or lock)."""
    return load_image_spec(ref) if _names_image_spec(ref) else load_locked(ref, lock="attach")


def _recipe(ref: str) -> Locked:
    """R as a recipe: push, pull, verify and export go through its lock."""
    if _names_image_spec(ref):
        raise ReproError(
            f"{ref} is an image spec; push, pull and verify work on a locked recipe",
            hint="name the recipe (or its lock file) that uses this image",
        )
    return load_locked(ref, lock="require")


@click.group("image")
def image() -> None:
    """Build, push, pull, verify and export pinned SGLang images.

    R names a recipe (its name, its file, or its lock); `build` also takes an image spec
    name (images/<name>.yaml). The recipe's lock (locks/<name>.lock.json) records what was
    built (tag, content fingerprint, manifest) and pushed (registry digest):

    \b
      repro image build R                  # on the machine that builds
      repro image push R --registry HOST/NS
      repro image pull R                   # on the next cluster, by digest
    """


image.add_command(patch)


@image.command("build")
@click.argument("ref", metavar="R")
@json_option("the result")
@click.option(
    "--relock-image",
    is_flag=True,
    help="Build and record a new image in R's lock even though it records one already.",
)
@click.option(
    "--rebuild",
    is_flag=True,
    help="Build again over the content tag even when it exists (e.g. changed in place).",
)
def build(ref: str, as_json: bool, relock_image: bool, rebuild: bool) -> None:
    """Build Dockerfile.sglang for R (a no-op when its content tag exists).

    When R's lock records an image already, that image is checked (content fingerprint)
    and used, never replaced: a mismatch is refused unless --relock-image says so. An image
    a lock is about to record is first checked against a build of the same inputs (from
    the build cache: seconds); one changed in place is refused unless --rebuild says so.
    """
    target = _recipe_or_spec(ref)
    if isinstance(target, ImageSpec):
        refuse_placeholder(target, f"build image {target.name}")
    elif target.image is None:  # a recorded image is checked, not built from its base
        refuse_placeholder(target.need_image_spec(), f"build the image of {target.name}")
    with _console.status(f"building the image of {ref}") as status:

        def on_log(line: str) -> None:
            status.update(f"[dim]{escape(line[:110])}[/]")

        if isinstance(target, ImageSpec):
            built = build_image(plan_for_spec(target, _say), on_log, rebuild=rebuild)
        else:
            built, _ = locked_image.build_for(target, on_log, _say, relock_image, rebuild)
    if as_json:
        click.echo(built.model_dump_json(indent=2, exclude={"manifest"}))
        return
    manifest = built.manifest
    kind = "simulated" if manifest.get("simulated") else "real"
    click.echo(f"tag          {built.tag}")
    click.echo(f"image id     {built.image_id}")
    click.echo(f"fingerprint  {built.fingerprint}")
    click.echo(f"sglang       {manifest.get('sglang_version')} ({kind})")
    for name, version in built.locked_image().components.items():
        if name != "sglang":
            click.echo(f"{name:<13}{version or '-'}")
    click.echo(f"patches      {len(manifest.get('patches') or [])}")


@image.command("tiny-model")
@click.option("--seed", type=click.IntRange(0, 2**31), default=0, show_default=True)
@click.option(
    "--like",
    "like",
    metavar="RECIPE",
    help="Make tiny twins of RECIPE's model and drafter instead (same architectures, scaled "
    "down), with the host's engine Python (scripts/ensure-sglang), without Docker; "
    f"{TWINS_FOR}.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Hub cache to publish into (default: HF_HUB_CACHE, ~/.cache/huggingface/hub).",
)
@json_option("the twins' repositories and snapshot folders")
def tiny_model(seed: int, like: str | None, cache_dir: Path | None, as_json: bool) -> None:
    """Make the tiny model of recipe qwen3-tiny-cpu and publish it into the Hub cache.

    It is generated in the CPU engine's base image (built first if needed) from the seed,
    the same bytes on every machine, and written as one commit of repro-tiny/qwen3-tiny, so
    `HF_HUB_OFFLINE=1 repro run qwen3-tiny-cpu` locks, fetches and serves it with no Hub.
    With --like RECIPE: seeded twins of that recipe's model and drafter, each one commit.
    The twins are what SGLang's own start-up code checks a recipe on (`repro recipe check`)
    and what a GPU or the CPU engine serves to test a recipe's path without its weights: the
    real architecture and kernel shapes, random weights (the text is noise).
    """
    from repro.hub import cache_root  # deferred: huggingface_hub

    cache = cache_root(cache_dir)
    if like is not None:
        _twins(like, seed, cache, as_json)
        return
    from repro.image.tiny_model import TINY_REPO, publish_tiny_model

    with _console.status("making the tiny model") as status:
        commit = publish_tiny_model(cache, seed, lambda line: status.update(escape(line[:110])))
    if as_json:
        click.echo(json.dumps({"model_repo": TINY_REPO, "commit": commit, "cache": str(cache)}))
        return
    click.echo(f"published {TINY_REPO}@{commit} (main) into {cache}")
    click.echo("next: HF_HUB_OFFLINE=1 repro run qwen3-tiny-cpu")


def _twins(ref: str, seed: int, cache: Path, as_json: bool) -> None:
    from repro.realengine.twins import ensure_twins

    recipe = load_recipe(ref)
    with _console.status(f"making the twins of {recipe.name}"):
        twins = ensure_twins(recipe, seed=seed, cache_dir=cache)
    if as_json:
        click.echo(json.dumps({k: v and str(v) for k, v in dataclasses.asdict(twins).items()}))
        return
    click.echo(f"model    {twins.model_repo}\n         commit {twins.model_dir.name}")
    if twins.drafter_dir is not None:
        click.echo(f"drafter  {twins.drafter_repo}\n         commit {twins.drafter_dir.name}")
    click.echo(f"published (main) into {cache}; --json gives the snapshot folders")
    click.echo(TWINS_FOR)


@image.command("push")
@click.argument("ref", metavar="R")
@click.option("--registry", required=True, help="host[:port]/namespace to push to.")
@json_option("the result")
def push(ref: str, registry: str, as_json: bool) -> None:
    """Push R's built image; record its digest in the lock. Never moves a version tag.

    Log in beforehand with `docker login HOST`: repro uses the Docker credential store only.
    """
    said: list[str] = []
    with _console.status(f"pushing {ref}") as status:

        def show(line: str) -> None:
            said.append(line)
            status.update(escape(line))

        pushed, _ = locked_image.push_for(_recipe(ref), registry, show)
    if said:
        _say(said[-1])
    click.echo(pushed.model_dump_json(indent=2) if as_json else pushed.pinned)


@image.command("pull")
@click.argument("ref", metavar="R")
def pull(ref: str) -> None:
    """Pull R's image by the digest in its lock, then verify its content fingerprint."""
    click.echo(locked_image.pull_for(_recipe(ref)))


@image.command("verify")
@click.argument("ref", metavar="R")
def verify(ref: str) -> None:
    """Check that the local image has the content fingerprint R's lock records."""
    click.echo(f"ok {locked_image.verify_for(_recipe(ref))}")


@image.command("export")
@click.argument("ref", metavar="R")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["docker-archive", "enroot"]),
    default="docker-archive",
    show_default=True,
)
@click.option("--output", "-o", type=click.Path(path_type=Path), required=True)
def export(ref: str, fmt: str, output: Path) -> None:
    """Export R's image for machines without registry access (tar, or enroot squashfs)."""
    reference = locked_image.locked_reference(_recipe(ref))
    if fmt == "docker-archive":
        click.echo(export_archive(reference, output))
        return
    command, ran = export_enroot(reference, output)
    click.echo(json.dumps({"command": command, "ran": ran}))


@image.command("arch-check")
@click.argument("ref", metavar="R")
@click.option(
    "--compute-cap",
    "caps",
    multiple=True,
    help="Check these compute capabilities (e.g. 12.0) instead of this machine's GPUs.",
)
def arch_check(ref: str, caps: tuple[str, ...]) -> None:
    """Refuse when a GPU's compute capability is not among the image's architectures."""
    if not caps:
        caps = tuple(g.compute_cap for g in collect_fingerprint().gpus if g.compute_cap)
    target = _recipe_or_spec(ref)
    locked_image.arch_check(target, list(caps))
    carried, source = locked_image.image_architectures(target)
    click.echo(
        f"ok: {', '.join(caps) or 'no GPUs'} covered by {', '.join(carried) or '-'} ({source})"
    )


@image.command("catalog")
@click.argument("version")
@click.option(
    "--into",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Folder to write sglang-VERSION.json to (the shipped ones: src/repro/catalogs).",
)
@sglang_python_option(
    "The CPU engine's Python (scripts/ensure-sglang) that imports SGLang's parser."
)
def catalog(version: str, into: Path, sglang_python: Path) -> None:
    """Extract the option catalog of SGLang release VERSION from its wheel, on the CPU.

    Downloads the wheel (pip download --no-deps sglang==VERSION), reads every option of
    ServerArgs.add_cli_args (spellings, aliases, types, choices, defaults, the flag that
    replaces a deprecated one), the speculative algorithms and the day the release was
    built, and writes sglang-VERSION.json: what `repro recipe check` reads before a lock
    and what picks the stand-in of a nightly (the newest release built before it).

    \b
      repro image catalog 0.5.18 --into src/repro/catalogs
    """
    target = extract_release_catalog(version, sglang_python, into, _say)
    click.echo(str(target))


@image.command("bump")
@click.argument("spec")
@click.option("--tag", required=True, help="The newer tag of the spec's base repository.")
@click.option("--dry-run", is_flag=True, help="Print the drift; leave the spec as it is.")
@json_option("the re-pin and every recipe's drift")
def bump(spec: str, tag: str, dry_run: bool, as_json: bool) -> None:
    """Re-pin image spec SPEC to a newer TAG, printing first what it changes.

    Pulls the tag (its digest is the registry's), reads the new image's own option
    catalog, and for every recipe using SPEC prints the options it uses that were added,
    removed or changed, and what `repro recipe check` would now refuse. Then re-pins
    images/SPEC.yaml; nothing is rebuilt until the recipes are locked again.

    \b
      repro image bump sglang-nightly-cu13 \\
        --tag nightly-dev-cu13-20261120-0a1b2c3d
    """
    result = bump_image(spec, tag, write=not dry_run, progress=_say)
    if as_json:
        click.echo(json.dumps(dataclasses.asdict(result), default=str, indent=2))
        return
    for line in bump_lines(result):
        click.echo(line)


def bump_lines(result: Bump) -> list[str]:
    lines = [f"{result.spec}: {result.old}", f"  -> {result.new}"]
    lines.append(f"catalog: {result.old_catalog} -> {result.new_catalog}")
    for drift in result.recipes:
        if not drift.changes and not drift.new_errors:
            lines.append(f"{drift.recipe}: no change to the {drift.options} options it uses")
            continue
        lines.append(f"{drift.recipe}:")
        lines += [f"  {change}" for change in drift.changes]
        lines += [f"  no longer checks: {error}" for error in drift.new_errors]
    if not result.recipes:
        lines.append("no recipe uses it")
    if result.written:
        lines.append(f"re-pinned {result.written}; `repro lock NAME` builds on it")
    return lines
