"""An image spec whose base digest is a placeholder (all zeros: written where the registry could
not be reached) on the box that would run it: `repro lock`, `repro image build` and `repro run`
refuse it before the Hub, a patch download or the Docker engine is asked for anything, naming
the `repro image bump` that pins the spec's own tag and that it needs the registry;
`recipe check` and `doctor` say it in one line, `recipe check --strict` fails, and a run's
plan starts with the bump. Once the digest is pinned, nothing is said and the lock goes on to
the Hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.image.build import BuildPlan, build_image
from repro.recipe.placeholder import PLACEHOLDER_DIGEST, PlaceholderDigest
from repro.run.pipeline import exit_code_of
from tests.recipe.conftest import Project, make_project
from tests.support.cli import isolated_env, repro

BUMP_0523 = "`repro image bump sglang-0.5.23-cu13 --tag v0.5.23-cu130`"
BUMP_DDTREE = "`repro image bump sglang-0.5.15-cu13-ddtree --tag v0.5.15-cu130`"
NEEDS_REGISTRY = "it pulls that tag from Docker Hub, so it needs the registry"
SPEC_0523 = "images/sglang-0.5.23-cu13.yaml"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return make_project(tmp_path / "proj")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """No Docker engine, an offline Hub and an empty patch cache: anything asked of them fails
    with its own error, never with the placeholder's."""
    return {
        **isolated_env(tmp_path),
        "DOCKER_HOST": f"unix://{tmp_path}/no-engine.sock",
        "HF_HUB_OFFLINE": "1",
        "HF_HUB_CACHE": str(tmp_path / "hub"),
        "REPRO_PATCH_CACHE": str(tmp_path / "patches"),
        "REPRO_RECIPES_DIR": "",
        "REPRO_IMAGES_DIR": "",
    }


def _refused(stderr: str, doing: str, spec: str, bump: str) -> None:
    assert f"error: refusing to {doing}: {spec}: base.digest is a placeholder" in stderr, stderr
    assert bump in stderr and NEEDS_REGISTRY in stderr
    assert "Docker engine" not in stderr and "Traceback" not in stderr


def test_lock_refuses_a_placeholder_before_the_hub(
    project: Project, env: dict[str, str], tmp_path: Path
) -> None:
    result = repro("lock", "kimi26-ep4", cwd=project.root, env=env)
    assert result.returncode == 1
    _refused(result.stderr, "lock kimi26-ep4", SPEC_0523, BUMP_0523)
    assert not (tmp_path / "locks").exists() and not (project.root / "locks").exists()


@pytest.mark.parametrize(
    ("ref", "doing", "spec", "bump"),
    [
        ("kimi26-ep4", "build the image of kimi26-ep4", SPEC_0523, BUMP_0523),
        (
            "sglang-0.5.15-cu13-ddtree",
            "build image sglang-0.5.15-cu13-ddtree",
            "images/sglang-0.5.15-cu13-ddtree.yaml",
            BUMP_DDTREE,
        ),
    ],
)
def test_image_build_refuses_a_placeholder_before_docker_or_a_patch_download(
    project: Project,
    env: dict[str, str],
    tmp_path: Path,
    ref: str,
    doing: str,
    spec: str,
    bump: str,
) -> None:
    result = repro("image", "build", ref, cwd=project.root, env=env)
    assert result.returncode == 1
    _refused(result.stderr, doing, spec, bump)
    assert not (tmp_path / "patches").exists()  # the DDTree PR's diff was not fetched


def test_a_build_plan_on_a_placeholder_base_is_refused_before_docker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What `repro run LOCK` reaches when a lock of another repro carries such a spec."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    plan = BuildPlan(
        name="old-spec",
        sglang_version="0.5.23",
        base_ref=f"lmsysorg/sglang:v0.5.23-cu130@{PLACEHOLDER_DIGEST}",
    )
    with pytest.raises(PlaceholderDigest) as refused:
        build_image(plan)
    assert "refusing to build image old-spec" in refused.value.message
    assert "`repro image bump old-spec --tag v0.5.23-cu130`" in str(refused.value.hint)


def test_run_stops_at_the_lock_stage_before_the_image_stage(
    project: Project, env: dict[str, str], tmp_path: Path
) -> None:
    """`make recipe R=kimi26-ep4` is `repro run recipes/kimi26-ep4.yaml`; doctor (skipped here:
    this machine has no GPU) is the only stage before the lock."""
    runs = tmp_path / "runs"
    result = repro(
        "run", "recipes/kimi26-ep4.yaml", "--from", "lock", "--runs-dir", str(runs),
        cwd=project.root, env=env,
    )  # fmt: skip
    assert result.returncode == exit_code_of("lock"), result.stderr
    assert "stage lock failed: refusing to lock kimi26-ep4" in result.stderr
    assert BUMP_0523 in result.stderr
    assert "── image" not in result.stderr
    plan = repro(
        "run", "kimi26-ep4", "--dry-run", "--runs-dir", str(runs), cwd=project.root, env=env
    )
    assert plan.returncode == 0, plan.stderr
    commands = [line for line in plan.stderr.splitlines() if line.startswith("$ ")]
    assert commands[0].startswith(f"$ {BUMP_0523.strip('`')}   # the base digest is a placeholder")
    assert commands[1] == "$ repro lock kimi26-ep4"


def test_check_and_doctor_say_it_and_strict_fails(project: Project, env: dict[str, str]) -> None:
    check = repro("recipe", "check", "--no-engine", "kimi26-ep4", cwd=project.root, env=env)
    assert check.returncode == 0, check.stdout
    line = (
        f"warning: {SPEC_0523}: base.digest: a placeholder (all zeros), not the digest of "
        "lmsysorg/sglang:v0.5.23-cu130: lock and image build refuse it; pin it with "
        f"{BUMP_0523} ({NEEDS_REGISTRY})"
    )
    assert line in check.stdout
    strict = repro(
        "recipe", "check", "--no-engine", "--strict", "kimi26-ep4", cwd=project.root, env=env
    )
    assert strict.returncode == 1 and "0/1 recipes pass" in strict.stdout
    doctor = repro("doctor", "kimi26-ep4", cwd=project.root, env=env)
    assert f"note: {SPEC_0523}: base.digest: a placeholder" in doctor.stdout + doctor.stderr


def test_a_pinned_digest_is_not_refused(project: Project, env: dict[str, str]) -> None:
    spec = project.images / "sglang-0.5.23-cu13.yaml"
    pinned = "sha256:" + "5e" * 32  # as `repro image bump` would write it
    spec.write_text(spec.read_text().replace(PLACEHOLDER_DIGEST, pinned))
    check = repro(
        "recipe", "check", "--no-engine", "--strict", "kimi26-ep4", cwd=project.root, env=env
    )
    assert check.returncode == 0 and "placeholder" not in check.stdout, check.stdout
    lock = repro("lock", "kimi26-ep4", cwd=project.root, env=env)
    assert lock.returncode != 0  # the offline Hub has no Kimi K2.6: the lock got that far
    assert "placeholder" not in lock.stderr and "moonshotai/Kimi-K2.6" in lock.stderr, lock.stderr
