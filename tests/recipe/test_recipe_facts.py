"""A drafter that does not fit the model and parallel sizes that do not fit its heads or the
GPUs are refused by `recipe check`, naming the file the user edited."""

from __future__ import annotations

from click.testing import CliRunner

from repro.cli import main
from repro.lock.locked import resolved
from repro.recipe import check_recipe, load_recipe

from .conftest import Project, by_rule

QWEN_DRAFTER = """\
extends: kimi26-ep4-dflash
drafter:
  repo: z-lab/Qwen3-8B-DFlash-b16
  facts: {vocab_size: 151936, hidden_size: 4096}
"""


def test_a_qwen_drafter_on_kimi_is_refused_naming_the_edited_file(project: Project) -> None:
    project.recipe("my-kimi", QWEN_DRAFTER)
    [finding] = by_rule(check_recipe(resolved(load_recipe("my-kimi"))), "drafter-fits-model")
    assert finding.severity == "error"
    assert (finding.file, finding.path) == ("recipes/my-kimi.yaml", "drafter.repo")
    assert "vocab_size 151936 vs 163840, hidden_size 4096 vs 7168" in finding.message
    result = CliRunner().invoke(main, ["recipe", "check", "--no-engine", "my-kimi"])
    assert result.exit_code != 0
    assert "recipes/my-kimi.yaml" in result.output and "does not fit model" in result.output
    shipped = check_recipe(resolved(load_recipe("kimi26-ep4-dflash")))
    assert by_rule(shipped, "drafter-fits-model") == []


def test_facts_of_the_parent_drafter_are_not_taken_for_another(project: Project) -> None:
    project.recipe("my-kimi", "extends: kimi26-ep4-dflash\ndrafter: {repo: org/other}\n")
    findings = check_recipe(resolved(load_recipe("my-kimi")))
    assert by_rule(findings, "drafter-fits-model") == []  # nothing known about org/other
    [unchecked] = by_rule(findings, "drafter-fit-unchecked")  # and it says so
    assert unchecked.severity == "warning"
    assert (unchecked.file, unchecked.path) == ("recipes/my-kimi.yaml", "drafter.repo")
    assert "org/other: its fit to model moonshotai/Kimi-K2.6 is unchecked" in unchecked.message
    assert "recipes/kimi26-ep4-dflash.yaml are the drafter's it replaces" in unchecked.message
    result = CliRunner().invoke(main, ["recipe", "check", "my-kimi"])
    assert result.exit_code == 0 and "is unchecked" in result.output
    project.recipe("my-kimi", QWEN_DRAFTER.replace("151936", "163840").replace("4096", "7168"))
    checked = check_recipe(resolved(load_recipe("my-kimi")))
    assert by_rule(checked, "drafter-fits-model") == by_rule(checked, "drafter-fit-unchecked") == []


def test_tp3_on_eight_gpus_is_refused(project: Project) -> None:
    project.recipe("tp3", "extends: kimi26-tp8\nparallelism: {tp: 3}\n")
    findings = check_recipe(resolved(load_recipe("tp3")))
    [heads] = by_rule(findings, "tp-divides-heads")
    assert "tp 3 does not divide the model's 64 attention heads" in heads.message
    [gpus] = by_rule(findings, "tp-divides-gpus")
    assert "3 ranks (tp 3 x pp 1) do not divide the topology's 8 GPUs" in gpus.message
    for finding in (heads, gpus):
        assert finding.severity == "error"
        assert (finding.file, finding.path) == ("recipes/tp3.yaml", "parallelism.tp")
    project.recipe("tp4", "extends: kimi26-tp8\nparallelism: {tp: 4}\ntopology: {gpus: 4}\n")
    clean = check_recipe(resolved(load_recipe("tp4")))
    assert by_rule(clean, "tp-divides-heads") == by_rule(clean, "tp-divides-gpus") == []


def test_tp16_names_the_edited_file_not_the_parent(project: Project) -> None:
    project.recipe("tp16", "extends: kimi26-tp8\nparallelism: {tp: 16}\n")
    [finding] = by_rule(check_recipe(resolved(load_recipe("tp16"))), "gpus-needed")
    assert (finding.file, finding.path) == ("recipes/tp16.yaml", "parallelism.tp")
    assert "needs 16 GPUs" in finding.message
