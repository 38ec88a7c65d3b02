"""`repro export slurm`: the sbatch script's structure, its syntax (`bash -n`) and the image
reference in the form enroot parses."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from repro.cli import main
from repro.export import ExportError, SlurmOptions, render_slurm
from repro.lock import load_locked

from .conftest import DIGEST, Project

ENROOT_FORM = f"127.0.0.1:5000#team/sglang-nightly-cu13:{DIGEST}"


def _srun_command(script: str) -> list[str]:
    """The srun command line as the batch shell reads it (continuations joined)."""
    text = script.replace("\\\n", " ")
    [line] = [line for line in text.splitlines() if line.startswith("srun ")]
    return shlex.split(line)


def test_script_structure(project: Project) -> None:
    script = render_slurm(load_locked(str(project.lock("kimi26-tp16-2n"))))
    lines = script.splitlines()
    assert lines[0] == "#!/bin/bash"
    sbatch = [line for line in lines if line.startswith("#SBATCH")]
    assert "#SBATCH --nodes=2" in sbatch
    assert "#SBATCH --ntasks-per-node=1" in sbatch
    assert "#SBATCH --gpus-per-node=8" in sbatch
    # Every #SBATCH line comes before the first command (sbatch stops reading at it).
    first_command = next(i for i, line in enumerate(lines) if line and not line.startswith("#"))
    assert all(lines.index(s) < first_command for s in sbatch)
    assert f"IMAGE={shlex.quote(ENROOT_FORM)}" in lines
    assert 'MASTER_ADDR="$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1)"' in lines
    assert "export MASTER_ADDR" in lines
    srun = _srun_command(script)
    assert srun[:4] == ["srun", "--nodes=2", "--ntasks=2", "--ntasks-per-node=1"]
    assert "--container-image=$IMAGE" in srun
    assert "--container-mounts=$HUB_CACHE:/root/.cache/huggingface" in srun
    assert srun[-3:-1] == ["bash", "-c"]
    # The server command reaches bash -c with its variables unexpanded (single quotes).
    inner = shlex.split(srun[-1].replace("\\\n", " "))
    assert inner[:4] == ["exec", "python3", "-m", "sglang.launch_server"]
    assert inner[inner.index("--node-rank") + 1] == "$SLURM_NODEID"
    assert inner[inner.index("--dist-init-addr") + 1] == "$MASTER_ADDR:20000"
    assert inner[inner.index("--nnodes") + 1] == "2"
    assert "'exec python3" in script  # single-quoted in the script text itself


def test_script_passes_bash_n(project: Project, tmp_path: Path) -> None:
    for name in ("kimi26-tp16-2n", "kimi26-tp8", "demo"):
        path = tmp_path / f"{name}.sbatch"
        path.write_text(render_slurm(load_locked(str(project.lock(name)))))
        result = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


def test_single_node_has_no_rank(project: Project) -> None:
    script = render_slurm(load_locked(str(project.lock("kimi26-tp8"))))
    assert "#SBATCH --nodes=1" in script
    assert "--node-rank" not in script and "MASTER_ADDR" not in script


def test_env_exported_and_no_token(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_" + "y" * 34)
    script = render_slurm(load_locked(str(project.lock("demo"))))
    assert "export REPRO_SIM_PROFILE=demo" in script
    assert "hf_yyyy" not in script
    assert "#SBATCH --gpus-per-node" not in script  # the simulator needs no GPU


def test_options_and_squashfs(project: Project) -> None:
    locked = load_locked(str(project.lock("kimi26-tp16-2n")))
    opts = SlurmOptions(
        squashfs="/shared/images/kimi.sqsh",
        hub_cache="/shared/hf cache",
        partition="gpu",
        account="llm",
        time="04:00:00",
        job_name="kimi",
        dist_port=29500,
    )
    script = render_slurm(locked, opts)
    for line in ("#SBATCH --partition=gpu", "#SBATCH --account=llm", "#SBATCH --time=04:00:00"):
        assert line in script
    assert "#SBATCH --job-name=kimi" in script
    assert "IMAGE=/shared/images/kimi.sqsh" in script
    assert "HUB_CACHE='/shared/hf cache'" in script
    assert '"$MASTER_ADDR:29500"' in script
    with pytest.raises(ExportError, match="absolute path"):
        render_slurm(locked, SlurmOptions(squashfs="kimi.sqsh"))
    with pytest.raises(ExportError, match="unexpected characters"):
        render_slurm(locked, SlurmOptions(partition="gpu\n#SBATCH --qos=high"))


def test_refuses_without_digest(project: Project) -> None:
    locked = load_locked(str(project.lock("kimi26-tp16-2n", digest=None)))
    with pytest.raises(ExportError, match="no pushed image digest"):
        render_slurm(locked)
    # A squashfs made by `repro image export --format enroot` needs no registry digest.
    assert "IMAGE=/s/k.sqsh" in render_slurm(locked, SlurmOptions(squashfs="/s/k.sqsh"))


# --- enroot's reference grammar ----------------------------------------------------------------
# The regular expressions of enroot's docker:// parser, copied from NVIDIA/enroot src/docker.sh:
# v3.5.0 (docker::import), and the `REGISTRY#IMAGE[:TAG]` branch of docker::_parse_uri at
# 8ea147d (4.x). Each prints registry|image|tag, the parts enroot requests
# https://REGISTRY/v2/IMAGE/manifests/TAG with.
ENROOT_3_5 = r"""
reg_user="[[:alnum:]_.!~*\'()%\;:\&=+$,-@]+"
reg_registry="[^#]+"
reg_image="[[:lower:][:digit:]/._-]+"
reg_tag="[[:alnum:]._:-]+"
if [[ "$1" =~ ^docker://((${reg_user})@)?((${reg_registry})#)?(${reg_image})(:(${reg_tag}))?$ ]]
then echo "${BASH_REMATCH[4]}|${BASH_REMATCH[5]}|${BASH_REMATCH[7]}"; else exit 1; fi
"""
ENROOT_4 = r"""
reg_user="[[:alnum:]_.!~*\'()%\;:\&=+$,-@]+"
reg_image="[[:lower:][:digit:]/._-]+"
reg_tag="[[:alnum:]._:-]+"
if [[ "$1" =~ ^docker://((${reg_user})@)?([^#/@]+)#(${reg_image})(:(${reg_tag}))?$ ]]
then echo "${BASH_REMATCH[3]}|${BASH_REMATCH[4]}|${BASH_REMATCH[6]}"; else exit 1; fi
"""


def _enroot_parse(parser: str, reference: str) -> str | None:
    # pyxis prefixes the --container-image value with docker:// (pyxis_slurmstepd.c)
    run = subprocess.run(
        ["bash", "-c", parser, "enroot", f"docker://{reference}"], capture_output=True, text=True
    )
    return run.stdout.strip() if run.returncode == 0 else None


@pytest.mark.parametrize("parser", [ENROOT_3_5, ENROOT_4], ids=["enroot-3.5", "enroot-4"])
def test_image_reference_is_parsed_by_enroot(parser: str) -> None:
    from repro.export import parse_pinned

    image = parse_pinned(f"127.0.0.1:5000/team/sglang-nightly-cu13:0.5.23@{DIGEST}")
    assert image.enroot == ENROOT_FORM
    assert (
        _enroot_parse(parser, image.enroot) == f"127.0.0.1:5000|team/sglang-nightly-cu13|{DIGEST}"
    )


def test_enroot_3_rejects_the_forms_docker_uses() -> None:
    """Why the script does not pass `repo@sha256:` or `repo:tag@sha256:` to pyxis."""
    for form in (
        f"127.0.0.1:5000#team/sglang@{DIGEST}",
        f"127.0.0.1:5000#team/sglang:v1@{DIGEST}",
    ):
        assert _enroot_parse(ENROOT_3_5, form) is None


def test_cli_writes_executable_script(project: Project) -> None:
    lock = project.lock("kimi26-tp16-2n")
    out = project.root / "kimi.sbatch"
    result = CliRunner().invoke(main, ["export", "slurm", str(lock), "-p", "gpu", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.stat().st_mode & 0o777 == 0o755
    assert "#SBATCH --partition=gpu" in out.read_text()
