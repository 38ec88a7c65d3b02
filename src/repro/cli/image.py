"""`repro image build|push|pull|verify|export`: pinned SGLang images."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console

from repro.image.build import build_image
from repro.image.plan import plan_for_spec, resolve_image_spec
from repro.image.registry import (
    export_archive,
    export_enroot,
)
from repro.image.registry import (
    pull as pull_image,
)
from repro.image.registry import (
    push as push_image,
)
from repro.image.registry import (
    verify as verify_image,
)

_console = Console(stderr=True, highlight=False)


def _say(message: str) -> None:
    _console.print(f"[dim]·[/] {message}")


@click.group("image")
def image() -> None:
    """Build, push, pull, verify and export pinned SGLang images.

    \b
    REF is an image spec name (images/<name>.yaml) or anything that names a recipe (its name,
    its file, or a lock); a recipe means the image spec it names.
    """


@image.command("build")
@click.argument("ref")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def build(ref: str, as_json: bool) -> None:
    """Build Dockerfile.sglang for REF (a no-op when its content tag exists)."""
    spec = resolve_image_spec(ref)
    plan = plan_for_spec(spec, _say)
    _say(f"image {plan.tag}")
    with _console.status(f"building {plan.tag}") as status:
        built = build_image(plan, lambda line: status.update(f"[dim]{line[:110]}[/]"))
    if as_json:
        click.echo(built.model_dump_json(indent=2, exclude={"manifest"}))
        return
    _say(f"built {built.tag}")
    click.echo(f"tag          {built.tag}")
    click.echo(f"image id     {built.image_id}")
    click.echo(f"fingerprint  {built.fingerprint}")
    click.echo(
        f"sglang       {built.manifest.get('sglang_version')} "
        f"({'simulated' if built.manifest.get('simulated') else 'real'})"
    )
    click.echo(f"patches      {len(built.manifest.get('patches') or [])}")


@image.command("push")
@click.argument("tag")
@click.option("--registry", required=True, help="host[:port]/namespace to push to.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def push(tag: str, registry: str, as_json: bool) -> None:
    """Push a built image TAG; refuses to move an existing version tag to new content."""
    pushed = push_image(tag, registry)
    if as_json:
        click.echo(pushed.model_dump_json(indent=2))
    else:
        click.echo(pushed.pinned)


@image.command("pull")
@click.argument("pinned")
def pull(pinned: str) -> None:
    """Pull an image by digest (repository@sha256:...)."""
    click.echo(pull_image(pinned))


@image.command("verify")
@click.argument("image_ref")
@click.option("--fingerprint", required=True, help="The content fingerprint it must have.")
def verify(image_ref: str, fingerprint: str) -> None:
    """Check that a local image has the expected content fingerprint."""
    click.echo(f"ok {verify_image(image_ref, fingerprint)}")


@image.command("export")
@click.argument("image_ref")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["docker-archive", "enroot"]),
    default="docker-archive",
    show_default=True,
)
@click.option("--output", "-o", type=click.Path(path_type=Path), required=True)
def export(image_ref: str, fmt: str, output: Path) -> None:
    """Export an image for machines without registry access (tar or enroot squashfs)."""
    if fmt == "docker-archive":
        click.echo(export_archive(image_ref, output))
        return
    command, ran = export_enroot(image_ref, output)
    click.echo(json.dumps({"command": command, "ran": ran}))
