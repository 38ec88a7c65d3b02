"""What the stages of one `repro run` share, saved in the run directory for `--resume`."""

from __future__ import annotations

import shlex
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import yaml

from repro.lock import load_locked
from repro.recipe import render_shell
from repro.recipe.placeholder import pin_step
from repro.runfolder import RunFolder, fresh_run_dir
from repro.schema.lock import Locked
from repro.schema.recipe import Recipe
from repro.schema.runcontext import RunContextFile


@dataclass
class RunContext:
    """What the stages of one run share: the recipe with its lock once the lock stage ran
    (`ref` is what the user named, for the commands the run prints)."""

    ref: str
    locked: Locked
    run_dir: Path
    port: int | None = None
    keep: bool = False
    image_tag: str | None = None
    url: str | None = None
    external: bool = False  # --url: measure a server repro did not start
    deployment: str | None = None
    container_id: str | None = None  # the server container this run started

    @classmethod
    def create(
        cls,
        ref: str,
        resume: Path | None,
        runs_dir: Path,
        port: int | None,
        run_dir: Path | None = None,
    ) -> RunContext:
        if resume is not None:
            saved = RunFolder(resume).read_context()
            return cls(
                ref=saved.ref,
                locked=load_locked(saved.lock_path or saved.ref),
                run_dir=resume,
                port=saved.port,
                image_tag=saved.image_tag,
                url=saved.url,
                external=saved.external,
                deployment=saved.deployment,
                container_id=saved.container_id,
            )
        locked = load_locked(ref)
        run_dir = run_dir or fresh_run_dir(runs_dir, locked.name)
        return cls(ref=ref, locked=locked, run_dir=run_dir, port=port)

    def save(self) -> None:
        saved = RunContextFile(
            ref=self.ref,
            lock_path=str(self.locked.lock_path) if self.locked.lock_path else None,
            image_tag=self.image_tag,
            url=self.url,
            external=self.external,
            deployment=self.deployment,
            container_id=self.container_id,
            port=self.port,
        )
        self.folder.write_context(saved)

    @property
    def folder(self) -> RunFolder:
        return RunFolder(self.run_dir)

    @property
    def recipe(self) -> Recipe:
        return self.locked.recipe

    @property
    def simulated(self) -> bool:
        return self.recipe.simulator is not None

    def dry_run_commands(self) -> list[str]:
        """What the run would execute, without building, pulling or starting anything."""
        # deferred: python_on_whales
        from repro.launch.compose import BASE_COMPOSE, compose_command, render_override
        from repro.launch.from_recipe import image_to_run, launch_spec_for

        spec = launch_spec_for(self.locked, image_to_run(self.locked, False), self.port)
        override = self.folder.compose_override_file
        pin = pin_step(self.locked)
        return [
            *([pin] if pin else []),
            f"repro lock {self.ref}",
            f"repro image build {self.ref}   # -> {spec.image}",
            *([] if self.simulated else [f"repro fetch {self.ref}"]),
            shlex.join(compose_command(spec.project, override, "up", "-d", "--pull", "never")),
            f"# {override} would hold:\n" + yaml.safe_dump(render_override(spec), sort_keys=False),
            "# the server command inside the container:\n"
            + render_shell(self.locked.served, self.locked.need_catalog()),
            f"# base compose file: {BASE_COMPOSE}",
        ]

    def owns_running_server(self) -> bool:
        """Whether the server this run started is still the one running: its recorded
        container, alive and answering. Whatever else answers at the saved URL (another
        run's server, a foreign service, a relaunch by hand) is never adopted."""
        if self.deployment is None or self.container_id is None:
            return False
        from repro.launch.deploy import running_container_id  # deferred: python_on_whales

        return running_container_id(self.deployment) == self.container_id and self.server_is_up()

    def server_is_up(self) -> bool:
        if self.url is None:
            return False
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=5) as response:
                return int(response.status) == 200
        except OSError:
            return False

    def stop_server(self) -> None:
        """Stop the deployment this run started, its last log lines kept as the run's
        server.log (no-op when it started none)."""
        if self.deployment is not None and not self.keep:
            from repro.launch import stop  # deferred: python_on_whales
            from repro.run.provenance import keep_server_log

            keep_server_log(self.folder, self.deployment)
            stop(self.deployment, self.container_id)
            self.deployment, self.container_id = None, None
            self.save()
