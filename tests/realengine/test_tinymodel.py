"""The tiny model SGLang's engine serves in tests is made from a seed, byte for byte."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from repro.realengine.engine import engine_python, make_tiny_model
from tests.realengine.tensorfiles import shapes

pytestmark = pytest.mark.real_sglang


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_same_seed_gives_identical_files_and_another_seed_other_weights(tmp_path: Path) -> None:
    first = make_tiny_model(tmp_path / "a", seed=7, drafter=tmp_path / "a-draft")
    second = make_tiny_model(tmp_path / "b", seed=7, drafter=tmp_path / "b-draft")
    other = make_tiny_model(tmp_path / "c", seed=8)
    assert _files(first) == _files(second)
    assert _files(tmp_path / "a-draft") == _files(tmp_path / "b-draft")
    assert _files(first)["model.safetensors"] != _files(other)["model.safetensors"]
    assert _files(first)["tokenizer.json"] == _files(other)["tokenizer.json"]


def test_the_drafter_names_the_target_layers_and_the_mask_token(tmp_path: Path) -> None:
    target = make_tiny_model(tmp_path / "m", drafter=tmp_path / "d")
    draft = json.loads((tmp_path / "d" / "config.json").read_text())
    config = json.loads((target / "config.json").read_text())
    vocab = json.loads((target / "tokenizer.json").read_text())["added_tokens"]
    mask_id = {t["content"]: t["id"] for t in vocab}["<|MASK|>"]
    assert draft["architectures"] == ["DFlashDraftModel"]
    assert draft["dflash_config"]["mask_token_id"] == mask_id
    # SGLang captures layer k "before layer k + 1" (set_dflash_layers_to_capture,
    # sglang/srt/models/qwen3.py): the last layer cannot be read, so the 2-layer target
    # gives one feature, and the drafter's fc reads exactly one hidden state
    assert draft["dflash_config"]["target_layer_ids"] == [0]
    assert config["num_hidden_layers"] == 2
    assert draft["hidden_size"] == config["hidden_size"]
    fc = shapes(tmp_path / "d" / "model.safetensors")["fc.weight"]
    assert fc == [config["hidden_size"], config["hidden_size"]]


def test_drafters_of_block_8_and_16_as_sglang_reads_them(tmp_path: Path) -> None:
    """The H200 sweep's drafters: one seed, block sizes 8 and 16, read by SGLang 0.5.23's own
    parse_dflash_draft_config (srt/speculative/dflash_utils.py) in the engine's venv."""
    target = tmp_path / "m"
    for block in (8, 16):
        make_tiny_model(target, drafter=tmp_path / f"d{block}", block_size=block)
    d8, d16 = _files(tmp_path / "d8"), _files(tmp_path / "d16")
    assert d8["model.safetensors"] == d16["model.safetensors"]  # only the config differs
    read = (
        "import json, sys\n"
        "from sglang.srt.speculative.dflash_utils import parse_dflash_draft_config\n"
        "for path in sys.argv[1:]:\n"
        "    config = json.load(open(path + '/config.json'))\n"
        "    parsed = parse_dflash_draft_config(draft_hf_config=config)\n"
        "    print(parsed.resolve_block_size(default=0))\n"
    )
    done = subprocess.run(
        [str(engine_python()), "-c", read, str(tmp_path / "d8"), str(tmp_path / "d16")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["8", "16"]
