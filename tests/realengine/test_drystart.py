"""The engine dry-start: every shipped recipe through SGLang's own start-up code of its image's
release, on tiny twins, and SGLang's refusals as `recipe check` errors on the field at fault."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.recipe.conftest import Project
from tests.support.cli import invoke as _repro

pytestmark = pytest.mark.real_sglang


@pytest.fixture
def project(engine_project: Project) -> Project:
    return engine_project


def test_every_shipped_recipe_starts_up_on_its_images_sglang(project: Project) -> None:
    code, out = _repro("recipe", "check", "--json")
    results = {r["recipe"]: r for r in json.loads(out)}
    assert code == 0, [r["findings"] for r in results.values() if not r["ok"]]
    ran = {name: r["engine"] for name, r in results.items() if "sglang_version" in r["engine"]}
    not_run = {name: r["engine"]["not_run"] for name, r in results.items() if name not in ran}
    # only the simulator's recipes have no SGLang start-up to run
    assert all("simulator" in why for why in not_run.values()), not_run
    versions = {engine["sglang_version"] for engine in ran.values()}
    assert versions == {"0.5.15", "0.5.17", "0.5.23"}
    kimi = ran["kimi26-ep4-dflash"]
    assert kimi["model"]["architecture"] == "KimiK25ForConditionalGeneration"
    assert kimi["drafter"]["architecture"] == "DFlashDraftModel"
    qwen = ran["qwen36-27b-tp1-dflash-ddtree"]
    assert qwen["model"]["architecture"].startswith("Qwen3_5")
    assert any("patch set ddtree not applied" in line for line in qwen["stand_ins"])
    eagle = ran["kimi26-tp8-eagle3-b300"]["drafter"]["architecture"]
    assert "Eagle3" in eagle


def test_sglang_refuses_dflash_with_dp_attention_on_the_field_that_asks(
    project: Project,
) -> None:
    project.recipe(
        "dpa",
        "extends: kimi26-ep4-dflash\n"
        "server: {extra_args: [--enable-dp-attention, --dp-size, '8']}\n",
    )
    code, out = _repro("recipe", "check", "dpa")
    assert code == 1, out
    assert (
        "error: recipes/dpa.yaml: server.extra_args[0]: SGLang 0.5.23 refuses to start "
        "(resolve_once): DFLASH with dp attention requires --enable-dp-lm-head."
    ) in out
    assert "speculative_hook.py" in out


def test_render_resolved_shows_what_sglangs_hooks_decided(project: Project) -> None:
    code, out = _repro("recipe", "render", "--resolved", "kimi26-ep4-dflash")
    assert code == 0, out
    # the draft tokens come from the (twin) drafter's block size, by SGLang's DFLASH hook
    assert "#   speculative_num_draft_tokens: null -> 8  [_handle_dflash]" in out
    assert "GPU: SGLang's device queries answered for one RTX PRO 6000 (sm_120" in out
    code, out = _repro("recipe", "render", "--resolved", "kimi26-ep4", "--format", "json")
    resolved = json.loads(out)["resolved"]
    assert resolved["changed"]["page_size"]["resolved"] == 1
    assert resolved["model"]["architecture"] == "KimiK25ForConditionalGeneration"


def test_a_recipe_whose_release_has_no_engine_says_how_to_get_it(
    project: Project, tmp_path: Path
) -> None:
    code, out = _repro("recipe", "check", "kimi26-ep4", "--python", str(tmp_path / "none"))
    assert code == 0, out
    assert (
        "engine dry-start not run: SGLang 0.5.23's start-up code is not installed; "
        "`make sglang-engine` (scripts/ensure-sglang) installs it"
    ) in out


def test_what_sglangs_dflash_hook_refuses_follows_the_images_release(project: Project) -> None:
    """DP attention with DFLASH: refused by the nightly's era (0.5.17), allowed by 0.5.23 with
    --enable-dp-lm-head; a draft window below the draft tokens: refused. SGLang's own hook
    says each, not a rule of repro's."""
    dflash = "extends: kimi26-ep4-dflash\n"
    dpa = "parallelism: {tp: 8, ep: 4, dp: 2, dp_attention: true}\n"
    project.recipe("nightly-dpa", dflash + dpa + "image: sglang-nightly-cu13\n")
    project.recipe("dpa-lm-head", dflash + dpa.replace("true}", "true, dp_lm_head: true}"))
    project.recipe("window", dflash + "speculative: {num_draft_tokens: 8, draft_window_size: 4}\n")
    code, out = _repro("recipe", "check", "--json", "nightly-dpa", "dpa-lm-head", "window")
    results = {r["recipe"]: r for r in json.loads(out)}
    assert code == 1
    assert results["dpa-lm-head"]["ok"], results["dpa-lm-head"]["findings"]
    [nightly] = [f for f in results["nightly-dpa"]["findings"] if f["rule"] == "engine-dry-start"]
    assert nightly["message"].startswith("SGLang 0.5.17 refuses to start")
    assert "dp" in nightly["message"].lower() and nightly["path"].startswith("parallelism")
    [window] = [f for f in results["window"]["findings"] if f["rule"] == "engine-dry-start"]
    assert window["path"] == "speculative.draft_window_size", window


def test_the_dry_start_refuses_the_drafter_the_gpu_refused(
    project: Project, tmp_path: Path
) -> None:
    """The first GPU start of the twins (one H100, SGLang 0.5.23, 2026-12-08) refused every
    DFLASH server: the draft worker builds the drafter's ModelConfig with the target's context
    length (262144) and the drafter twin then said 4096. The dry-start builds it the same way,
    so a drafter like that one is refused here, for the reason the GPU gave."""
    from repro.lock import load_locked
    from repro.realengine.drystart import Target, dry_start, engine_for, findings
    from repro.realengine.twins import ensure_all_twins
    from repro.settings import SGLANG_PYTHON

    python = Path(SGLANG_PYTHON.text())
    locked = load_locked("kimi26-ep4-dflash")
    assert locked.catalog is not None
    [twins] = ensure_all_twins([locked.recipe], python=python)
    assert twins.drafter_dir is not None
    short = tmp_path / "drafter-4096"
    shutil.copytree(twins.drafter_dir, short)
    config = json.loads((short / "config.json").read_text())
    config["max_position_embeddings"] = 4096  # what the drafter twin said on that GPU
    (short / "config.json").write_text(json.dumps(config))
    target = Target(locked.recipe, locked.catalog, locked.image_spec, twins.model_dir, short)
    engine = engine_for("0.5.23", python)
    assert engine is not None
    [result] = dry_start([target], engine)
    [finding] = findings(target, result)
    assert "refuses to start (draft_model_config)" in finding.message
    assert (
        "Target model's context_length (262144) is greater than the derived context_length "
        "(4096)" in finding.message
    )
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN" in finding.message
