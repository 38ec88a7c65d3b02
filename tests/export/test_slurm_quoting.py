"""Hostile values in every field that reaches the sbatch script (lock file name, squashfs
path, Hub cache, image reference, recipe env and server options) stay data: the script,
run by bash with stand-in `srun`/`scontrol`, runs no injected command and hands each value to
the server literally."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from repro.export import ExportError, SlurmOptions, render_slurm
from repro.lock import load_locked

from .conftest import Project

# Each payload would create MARKER if a shell ever evaluated it.
PAYLOADS = [
    "x\ntouch {marker}\n#",
    "x;touch {marker};",
    "$(touch {marker})",
    "`touch {marker}`",
    "x'$(touch {marker})'",
]

SRUN = """#!/bin/bash
# srun stand-in: drop srun's own options, run the task command (bash -c ...) once as node 0.
while [[ $# -gt 0 && $1 != bash ]]; do shift; done
export SLURM_NODEID=0
exec "$@"
"""


def _run(script: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "srun").write_text(SRUN)
    (bin_dir / "scontrol").write_text("#!/bin/bash\necho n1\n")
    for tool in ("srun", "scontrol"):
        (bin_dir / tool).chmod(0o755)
    path = tmp_path / "job.sbatch"
    path.write_text(script)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_NODELIST": "n1"}
    return subprocess.run(
        ["bash", str(path)], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path
    )


def _recorder(out: Path) -> tuple[str, ...]:
    """A launcher that writes the argv it was given to `out`."""
    code = "import json, sys; open(sys.argv[1], 'w').write(json.dumps(sys.argv[2:]))"
    return (sys.executable, "-c", code, str(out))


@pytest.mark.parametrize("payload", PAYLOADS)
def test_hostile_values_reach_the_server_literally(
    project: Project, tmp_path: Path, payload: str
) -> None:
    marker = tmp_path / "pwned"
    value = payload.format(marker=marker)
    project.recipe(
        "hostile",
        "extends: kimi26-tp16-2n\n"
        + f"env: {{REPRO_NOTE: {json.dumps(value)}}}\n"
        + f"model: {{served_model_name: {json.dumps(value)}}}\n",
    )
    # The lock file's name reaches the script's header comment.
    lock = project.lock("hostile")
    renamed = lock.with_name(value.replace("/", "_") + ".lock.json")
    shutil.move(lock, renamed)
    argv_file = tmp_path / "argv.json"
    hub = tmp_path / value.replace("/", "_")
    opts = SlurmOptions(hub_cache=str(hub), job_name="hostile", launcher=_recorder(argv_file))
    script = render_slurm(load_locked(str(renamed)), opts)
    result = _run(script, tmp_path)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
    argv = json.loads(argv_file.read_text())
    assert argv[argv.index("--served-model-name") + 1] == value
    # The header names the lock file on one comment line.
    header = script.splitlines()[1]
    assert header.startswith("# ") and renamed.name.replace("\n", "\\n") in header


@pytest.mark.parametrize("payload", PAYLOADS)
def test_hostile_squashfs_is_refused_or_kept_literal(
    project: Project, tmp_path: Path, payload: str
) -> None:
    marker = tmp_path / "pwned"
    path = "/shared/" + payload.format(marker=marker).replace("/", "_") + ".sqsh"
    locked = load_locked(str(project.lock("kimi26-tp16-2n")))
    if "\n" in path:
        with pytest.raises(ExportError, match="no control characters"):
            render_slurm(locked, SlurmOptions(squashfs=path))
        return
    opts = SlurmOptions(squashfs=path, launcher=("true",))
    result = _run(render_slurm(locked, opts), tmp_path)
    assert result.returncode == 0, result.stderr
    assert not marker.exists()


@pytest.mark.parametrize("payload", PAYLOADS)
def test_hostile_image_reference_is_refused(project: Project, payload: str) -> None:
    locked = load_locked(str(project.lock("kimi26-tp16-2n")))
    reference = "reg/x" + payload.format(marker="/tmp/m") + "@sha256:" + "a" * 64
    with pytest.raises(ExportError):
        render_slurm(locked, SlurmOptions(image=reference))
