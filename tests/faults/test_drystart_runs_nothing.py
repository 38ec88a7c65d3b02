"""Hostile round four, the engine dry-start: a recipe from a stranger's pull request is checked
in CI with nothing of its choosing run, opened or reached.

Each case is what an attacker tried: a python file named by a config's `auto_map`, reached
through an option of `server.extra_args`; the recipe's `env:` pointing the Hub at its own
server while the user's token is in the environment; a FIFO where a config file is read; and
a start-up that never finishes, which must cost that recipe its result, not every recipe's.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from repro.realengine import probe_process
from repro.realengine.patched_release import site_packages_package
from repro.settings import SGLANG_PYTHON
from tests.faults.hostile_server import json_server
from tests.recipe.conftest import Project
from tests.support.cli import invoke as _repro

pytestmark = pytest.mark.real_sglang

MARKER_CODE = "import pathlib; pathlib.Path({marker!r}).write_text('ran')\n"


@pytest.fixture
def project(engine_project: Project) -> Project:
    return engine_project


def _remote_code_model(folder: Path, marker: Path) -> Path:
    """A model folder whose config names a python file that leaves `marker` when imported."""
    folder.mkdir(parents=True)
    (folder / "evil.py").write_text(MARKER_CODE.format(marker=str(marker)))
    config = {
        "architectures": ["EvilForCausalLM"],
        "model_type": "evil",
        "auto_map": {"AutoConfig": "evil.EvilConfig", "AutoModelForCausalLM": "evil.Evil"},
        "max_position_embeddings": 4096,
    }
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _hostile_extra_args(tmp_path: Path, marker: Path) -> dict[str, tuple[str, list[str]]]:
    """Each way a recipe pointed SGLang's start-up at the remote code: the base recipe and the
    extra_args that did it."""
    model = _remote_code_model(tmp_path / "evil-model", marker)
    config_file = tmp_path / "server.yaml"
    config_file.write_text(
        f"trust-remote-code: true\nspeculative-draft-model-path: {model}\n"
        "speculative-algorithm: DFLASH\n"
    )
    return {
        "drafter path": ("kimi26-ep4", ["--speculative-draft-model-path", str(model)]),
        "decrypted config": (
            "kimi26-ep4",
            ["--decrypted-config-file", str(model / "config.json")],
        ),
        "trust in extra_args": (
            "kimi26-ep4\nmodel: {trust_remote_code: false}",
            ["--trust-remote-code"],
        ),
        "config file": ("kimi26-ep4", ["--config", str(config_file)]),
    }


@pytest.mark.parametrize(
    "case", ["drafter path", "decrypted config", "trust in extra_args", "config file"]
)
def test_a_recipe_pointing_at_remote_code_is_refused_and_runs_none_of_it(
    project: Project, tmp_path: Path, case: str
) -> None:
    marker = tmp_path / "ran"
    base, extra = _hostile_extra_args(tmp_path, marker)[case]
    project.recipe("pr", f"extends: {base}\nserver: {{extra_args: {json.dumps(extra)}}}\n")
    for command in (
        ("recipe", "check", "pr"),
        ("recipe", "render", "--resolved", "pr"),
        ("lock", "pr"),
    ):
        code, out = _repro(*command)
        assert code != 0, (command, out)
        assert not marker.exists(), f"{command} ran the recipe's code"
    code, out = _repro("recipe", "check", "pr")
    assert "recipes/pr.yaml: server.extra_args[0]" in out
    owner = {
        "drafter path": "belongs to drafter.repo",
        "decrypted config": "is not taken in server.extra_args",
        "trust in extra_args": "belongs to model.trust_remote_code",
        "config file": "is not taken in server.extra_args",
    }[case]
    assert owner in out


def test_free_text_options_are_left_out_of_the_dry_start_and_named(
    project: Project, tmp_path: Path
) -> None:
    """An option whose value SGLang may open or import (a template file, a weight loader's
    module) is not given to the start-up code; the check says which it left out."""
    marker = tmp_path / "ran"
    template = tmp_path / "template.jinja"
    template.write_text("{{ messages }}")
    extra = ["--chat-template", str(template), "--custom-weight-loader", "os.system"]
    project.recipe("pr", f"extends: kimi26-ep4\nserver: {{extra_args: {json.dumps(extra)}}}\n")
    code, out = _repro("recipe", "render", "--resolved", "pr", "--format", "json")
    assert code == 0, out
    stand_ins = " ".join(json.loads(out)["resolved"]["stand_ins"])
    assert "--chat-template (server.extra_args[0])" in stand_ins
    assert "--custom-weight-loader (server.extra_args[2])" in stand_ins
    assert "remote code: off" in stand_ins
    assert not marker.exists()


@pytest.fixture
def hub_of_the_recipes() -> Iterator[tuple[str, list[str]]]:
    """A server the recipe points the Hub at, and every request it gets."""
    seen: list[str] = []
    with json_server({}, seen=seen) as url:
        yield url, seen


def test_a_recipes_env_sends_nothing_and_the_users_token_goes_nowhere(
    project: Project, monkeypatch: pytest.MonkeyPatch, hub_of_the_recipes: tuple[str, list[str]]
) -> None:
    url, seen = hub_of_the_recipes
    monkeypatch.setenv("HF_TOKEN", "hf_user_secret_token")
    project.recipe(
        "pr",
        "extends: kimi26-ep4-dflash\n"
        "env:\n"
        "  HF_HUB_OFFLINE: '0'\n"
        f"  HF_ENDPOINT: {url}\n"
        "  SGLANG_EXTERNAL_MODEL_PACKAGE: evil\n",
    )
    code, out = _repro("recipe", "render", "--resolved", "pr", "--format", "json")
    assert code == 0, out
    assert seen == [], "the check reached the recipe's server"
    assert "hf_user_secret_token" not in out
    stand_ins = " ".join(json.loads(out)["resolved"]["stand_ins"])
    for name in ("HF_HUB_OFFLINE", "HF_ENDPOINT", "SGLANG_EXTERNAL_MODEL_PACKAGE"):
        assert name in stand_ins


def test_a_fifo_as_config_file_is_refused_without_being_opened(
    project: Project, tmp_path: Path
) -> None:
    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)
    project.recipe("pr", f"extends: kimi26-ep4\nserver: {{extra_args: [--config, {fifo}]}}\n")
    code, out = _repro("recipe", "check", "pr")
    assert code == 1, out
    assert "recipes/pr.yaml: server.extra_args[0]: '--config' is not taken" in out


def test_a_recipe_that_does_not_finish_loses_its_own_result_only(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every recipe gets its own deadline after SGLang is imported: one that overruns is that
    recipe's failure, named, and the next recipe still gets its own run and result."""
    monkeypatch.setattr(probe_process, "RECIPE_DEADLINE_S", 0.0)
    code, out = _repro("recipe", "check", "--json", "kimi26-ep4", "kimi26-tp8")
    results = {r["recipe"]: r for r in json.loads(out)}
    assert code == 1
    for name in ("kimi26-ep4", "kimi26-tp8"):
        [finding] = [f for f in results[name]["findings"] if f["rule"] == "engine-dry-start"]
        assert "did not finish in 0 s" in finding["message"], finding


def test_an_image_whose_local_patch_adds_code_is_checked_without_running_it(
    project: Project, tmp_path: Path
) -> None:
    """A pull request's own image spec with a local patch to SGLang's start-up code (one that
    would leave a marker when server_args.py is imported): the dry-start runs the release's
    own code and says why, never the patch."""
    marker = tmp_path / "ran"
    package = site_packages_package(Path(SGLANG_PYTHON.text()))
    assert package is not None
    old = (package / "srt" / "server_args.py").read_text().splitlines(keepends=True)
    at = next(i + 1 for i, line in enumerate(old) if line.startswith("from __future__"))
    new = [*old[:at], MARKER_CODE.format(marker=str(marker)), *old[at:]]
    path = "python/sglang/srt/server_args.py"
    body = "".join(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}"))
    project.write("evil/evil.patch", f"diff --git a/{path} b/{path}\n{body}", folder="patches")
    base = (project.images / "sglang-0.5.23-cpu.yaml").read_text()
    spec = "patch_set:\n  name: evil\n  local: [evil.patch]\n"
    project.write("evil-cpu.yaml", base + spec, folder="images")
    project.recipe("pr", "extends: qwen3-tiny-cpu\nimage: evil-cpu\n")
    code, out = _repro("recipe", "render", "--resolved", "pr", "--format", "json")
    assert code == 0, out
    assert not marker.exists(), "the check ran the pull request's patch"
    stand_ins = " ".join(json.loads(out)["resolved"]["stand_ins"])
    assert "patch set evil not applied: its local patches (evil.patch)" in stand_ins
