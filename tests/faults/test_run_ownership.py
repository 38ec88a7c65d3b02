"""A run owns its server: `--resume` reuses only the container it recorded, never whatever
answers at the saved URL; one repro process at a time holds a deployment's claim."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.launch.claim import DeploymentBusy, deployment_claim
from repro.run import STAGE_NAMES
from repro.runfolder import RunFolder
from tests.faults.hostile_server import json_server
from tests.support.cli import isolated_env, repro


def _run_folder(tmp_path: Path, repo_root: Path, url: str, container_id: str | None) -> Path:
    """A run folder whose launch stage is done (server at `url`) and bench is not."""
    folder = tmp_path / "run"
    folder.mkdir()
    context = {
        "ref": str(repo_root / "recipes" / "demo.yaml"),
        "lock_path": None,
        "image_tag": "repro/sim:test",
        "url": url,
        "deployment": "demo",
        "container_id": container_id,
        "port": None,
    }
    RunFolder(folder).context_file.write_text(json.dumps(context))
    done = STAGE_NAMES[: STAGE_NAMES.index("launch") + 1]
    stages = [{"name": n, "status": "done" if n in done else "pending"} for n in STAGE_NAMES]
    RunFolder(folder).stages_file.write_text(json.dumps({"updated_at": "x", "stages": stages}))
    return folder


@pytest.mark.docker  # a dry run asks the engine which image it would run
@pytest.mark.parametrize("container_id", [None, "0" * 64])
def test_resume_never_adopts_a_foreign_server_at_the_saved_url(
    tmp_path: Path, repo_root: Path, monkeypatch: pytest.MonkeyPatch, container_id: str | None
) -> None:
    monkeypatch.setenv("REPRO_STATE_DIR", str(tmp_path / "state"))
    with json_server({"/health": {}, "/server_info": {"version": "9"}}) as url:
        folder = _run_folder(tmp_path, repo_root, url, container_id)
        result = CliRunner().invoke(main, ["run", "--resume", str(folder), "--dry-run"])
    assert result.exit_code == 0, result.output
    [launch] = [line for line in result.output.splitlines() if " launch " in line]
    assert "skip" not in launch  # launched again, not the server that answers there
    saved = json.loads(RunFolder(folder).stages_file.read_text())
    assert saved["stages"][STAGE_NAMES.index("launch")]["status"] == "done"  # a plan writes nothing


HOLD = """
import sys, time
from pathlib import Path
from repro.launch.claim import deployment_claim
from repro.runfolder import RunFolder
with deployment_claim(Path(sys.argv[1]), "demo"):
    print("held", flush=True)
    time.sleep(60)
"""


def test_a_second_process_is_refused_while_one_holds_the_claim(tmp_path: Path) -> None:
    folder = tmp_path / "state" / "deployments" / "demo"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with (
            pytest.raises(DeploymentBusy, match=f"pid {holder.pid}"),
            deployment_claim(folder, "demo"),
        ):
            pass
    finally:
        holder.kill()
        holder.wait(timeout=10)
    # Released by the kernel when the holder died, and re-entered by its own holder.
    with deployment_claim(folder, "demo"), deployment_claim(folder, "demo"):
        pass


def test_repro_run_is_refused_up_front_while_another_owns_the_deployment(
    tmp_path: Path, repo_root: Path
) -> None:
    state = tmp_path / "state"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(state / "deployments" / "demo")],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        result = repro(
            "run", "demo", "--runs-dir", str(tmp_path / "runs"), cwd=repo_root,
            env=isolated_env(tmp_path), timeout=120,
        )  # fmt: skip
    finally:
        holder.kill()
        holder.wait(timeout=10)
    assert result.returncode == 1, result.stderr
    assert "in use by another repro process" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "runs").exists()  # refused before any stage or folder
