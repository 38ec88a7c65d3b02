"""What the stages of one `repro run` share, saved in the run directory for `--resume`."""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from repro.fsutil import write_atomic
from repro.recipe import catalog_for_recipe, load_recipe
from repro.spec.recipe import Recipe

CONTEXT_FILE = "context.json"


@dataclass
class RunContext:
    """What the stages of one run share."""

    ref: str
    recipe: Recipe
    run_dir: Path
    port: int | None = None
    keep: bool = False
    lock_path: Path | None = None
    image_tag: str | None = None
    url: str | None = None
    deployment: str | None = None

    @classmethod
    def create(cls, ref: str, resume: Path | None, runs_dir: Path, port: int | None) -> RunContext:
        if resume is not None:
            saved = json.loads((resume / CONTEXT_FILE).read_text())
            pinned = saved.get("lock_path")
            ctx = cls(ref=saved["ref"], recipe=load_recipe(pinned or saved["ref"]), run_dir=resume)
            for key in ("lock_path", "image_tag", "url", "deployment", "port"):
                value = saved.get(key)
                setattr(ctx, key, Path(value) if key == "lock_path" and value else value)
            return ctx
        recipe = load_recipe(ref)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        return cls(ref=ref, recipe=recipe, run_dir=runs_dir / f"{stamp}-{recipe.name}", port=port)

    def save(self) -> None:
        data = {
            "ref": self.ref,
            "lock_path": str(self.lock_path) if self.lock_path else None,
            "image_tag": self.image_tag,
            "url": self.url,
            "deployment": self.deployment,
            "port": self.port,
        }
        write_atomic(self.run_dir / CONTEXT_FILE, json.dumps(data, indent=2) + "\n")

    @property
    def simulated(self) -> bool:
        return self.recipe.simulator is not None

    def dry_run_commands(self) -> list[str]:
        """What the run would execute, without building, pulling or starting anything."""
        from repro.launch.compose import BASE_COMPOSE, compose_command, render_override
        from repro.launch.from_recipe import image_to_run, launch_spec_for
        from repro.recipe import render_shell

        spec = launch_spec_for(self.recipe, image_to_run(self.recipe, False), self.port)
        override = self.run_dir / "compose.override.yaml"
        return [
            f"repro lock {self.ref}",
            f"repro image build {self.ref}   # -> {spec.image}",
            *([] if self.simulated else [f"repro fetch {self.ref}"]),
            shlex.join(compose_command(spec.project, override, "up", "-d", "--pull", "never")),
            f"# {override} would hold:\n" + yaml.safe_dump(render_override(spec), sort_keys=False),
            "# the server command inside the container:\n"
            + render_shell(self.recipe, catalog_for_recipe(self.recipe)),
            f"# base compose file: {BASE_COMPOSE}",
        ]

    def server_is_up(self) -> bool:
        import urllib.request

        if self.url is None:
            return False
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=5) as response:
                return int(response.status) == 200
        except OSError:
            return False

    def stop_server(self) -> None:
        """Stop the deployment this run started (no-op when it started none)."""
        if self.deployment is not None and not self.keep:
            from repro.launch import stop

            stop(self.deployment)
            self.deployment = None
            self.save()
