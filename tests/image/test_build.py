"""Dockerfile.sglang builds on the simulator base: patches, manifest, caching, failures."""

from __future__ import annotations

from pathlib import Path

import pytest
from testcontainers.core.container import DockerContainer

from repro.image.build import BuildPlan, ImageBuildError, PatchFile, build_image
from repro.image.buildplan import plan_for_spec
from repro.image.engine import client
from repro.recipe.images import load_image_spec
from tests.support.patches import SPEC_INFO, spec_info_patch

pytestmark = pytest.mark.docker


def _sim_plan(repo_root: Path, patches: list[PatchFile]) -> BuildPlan:
    plan = plan_for_spec(load_image_spec(repo_root / "images" / "sim.yaml"))
    return plan.model_copy(update={"name": "sim-test", "patches": patches})


def _run_sim(image: str, *argv: str) -> tuple[int, str]:
    """Start the simulator's launch_server in `image` (testcontainers: removed on exit, no
    pull) and return its exit status and output."""
    command = ["python3", "-m", "sglang.launch_server", "--model-path", "m", *argv]
    container = (
        DockerContainer(image)
        .with_env("REPRO_SIM_FAIL_AT_START", "checked-argv")
        .with_env("REPRO_SIM_LOAD_SECONDS", "0")
        .with_command(command)
    )
    with container:
        status = container.get_wrapped_container().wait(timeout=120)["StatusCode"]
        stdout, stderr = container.get_logs()
    return status, (stdout + stderr).decode()


def test_manifest_records_what_the_image_contains(sim_image: str) -> None:
    built = build_image(plan_for_spec(load_image_spec("images/sim.yaml")))
    assert built.tag == sim_image
    manifest = built.manifest
    assert manifest["sglang_version"] == "0.5.23" and manifest["simulated"] is True
    assert len(manifest["sglang_commit"]) == 40
    names = {option for flag in manifest["catalog"] for option in flag["options"]}
    assert {"--speculative-algorithm", "--tp-size", "--port"} <= names
    # the kernel versions the lock shows: the simulator's image has none
    components = built.locked_image().components
    assert components["sglang"] == "0.5.23" and components["sglang-kernel"] is None
    labels = client().image.inspect(sim_image).config.labels or {}
    assert labels["dev.repro.content-hash"].startswith(sim_image.rsplit("-", 1)[1])
    assert "org.opencontainers.image.revision" in labels


def test_a_patch_changes_what_the_server_accepts(repo_root: Path, tmp_path: Path) -> None:
    patch = PatchFile(name="00-ddtree.diff", content=spec_info_patch(repo_root, tmp_path))
    patched = build_image(_sim_plan(repo_root, [patch]))
    assert "DDTREE" in patched.manifest["speculative_algorithms"]
    assert patched.manifest["patches"] == [{"name": patch.name, "sha256": patch.sha256}]

    unpatched = build_image(_sim_plan(repo_root, []))
    args = ("--speculative-algorithm", "DDTREE", "--speculative-draft-model-path", "d")
    status, output = _run_sim(unpatched.tag, *args)
    assert status == 2, output
    status, output = _run_sim(patched.tag, *args, "--speculative-ddtree-budget", "15")
    assert status != 2, output


def test_same_inputs_same_tag_and_a_patch_change_rebuilds_only_the_top(
    repo_root: Path, tmp_path: Path
) -> None:
    first_patch = PatchFile(name="00-ddtree.diff", content=spec_info_patch(repo_root, tmp_path))
    first = _sim_plan(repo_root, [first_patch])
    assert first.tag == _sim_plan(repo_root, [first_patch]).tag
    second_patch = PatchFile(
        name="00-ddtree.diff", content=spec_info_patch(repo_root, tmp_path / "2", "DDTREE2")
    )
    second = _sim_plan(repo_root, [second_patch])
    assert second.tag != first.tag
    layers_first = client().image.inspect(build_image(first).tag).root_fs.layers
    layers_second = client().image.inspect(build_image(second).tag).root_fs.layers
    shared = sum(1 for a, b in zip(layers_first, layers_second, strict=False) if a == b)
    assert shared == len(layers_first) - 2, "only the patch and manifest layers may differ"


def test_a_patch_that_does_not_apply_names_the_patch_and_file(repo_root: Path) -> None:
    bad = PatchFile(
        name="00-stale.diff",
        content=(
            f"--- a/{SPEC_INFO}\n+++ b/{SPEC_INFO}\n@@ -1,2 +1,2 @@\n"
            "-this line is not in the file\n+nor is this one\n context\n"
        ).encode(),
    )
    with pytest.raises(ImageBuildError) as caught:
        build_image(_sim_plan(repo_root, [bad]))
    assert "00-stale.diff" in caught.value.message
    assert str(SPEC_INFO) in caught.value.message
