"""The twins are faithful where SGLang's kernels and start-up checks look.

A twin scales layers, hidden size, experts, head counts and vocabulary down. Every field in
`FIELDS` is one a kernel or a start-up check of SGLang 0.5.23 specialises on; the twin must
carry the real model's value (a ratio of head counts where the count itself is scaled). The
first H100 run (2026-12-08) showed what a scaled field costs: the triton MLA decode kernel did
not compile for the Kimi twin's scaled latent rank, and every DFlash drafter was refused at
start for a context length below its target's.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from repro.realengine.engine import engine_python
from repro.realengine.twins import KIMI_TEXT_TWIN, Twins, ensure_specs, twin_for
from repro.recipe import load_recipe
from repro.settings import SGLANG_VENV

pytestmark = pytest.mark.real_sglang

KIMI = "moonshotai/Kimi-K2.6"  # config.json text_config (DeepseekV3, inside kimi_k25)
QWEN36 = "Qwen/Qwen3.6-27B"  # config.json text_config (qwen3_5_text)
DFLASH = "z-lab DFlash drafters"  # Qwen3 layers: head_dim 128, 32 query to 8 kv heads
KIMI_YARN = {
    "type": "yarn", "factor": 64.0, "original_max_position_embeddings": 4096,
    "beta_fast": 1.0, "beta_slow": 1.0, "mscale": 1.0, "mscale_all_dim": 1.0,
}  # fmt: skip


@dataclass(frozen=True)
class KernelField:
    """A config field a kernel or a start-up check reads, the real model's value, and the
    SGLang 0.5.23 file (under sglang/) that reads it, by `reads` where that is not the
    field's own name. A field "a/b" is the ratio of two head counts."""

    model: str
    field: str
    real: object
    read_in: str
    reads: str = ""


# fmt: off
FIELDS = [
    KernelField(KIMI, "kv_lora_rank", 512, "srt/configs/model_config.py"),
    KernelField(KIMI, "kv_lora_rank", 512, "srt/mem_cache/memory_pool.py"),
    KernelField(KIMI, "kv_lora_rank", 512, "srt/layers/attention/triton_backend.py"),
    KernelField(KIMI, "qk_rope_head_dim", 64, "srt/configs/model_config.py"),
    KernelField(KIMI, "qk_nope_head_dim", 128, "srt/configs/model_config.py"),
    KernelField(KIMI, "v_head_dim", 128, "srt/configs/model_config.py"),
    KernelField(KIMI, "v_head_dim", 128, "srt/layers/attention/triton_backend.py"),
    KernelField(KIMI, "q_lora_rank", 1536, "srt/models/deepseek_v2.py"),
    KernelField(KIMI, "max_position_embeddings", 262144, "srt/utils/hf_transformers/common.py"),
    KernelField(KIMI, "rope_scaling", KIMI_YARN, "srt/configs/model_config.py", "mscale_all_dim"),
    KernelField(KIMI, "rope_theta", 50000.0, "srt/models/deepseek_v2.py"),
    KernelField(KIMI, "num_experts_per_tok", 8, "srt/models/deepseek_v2.py"),
    KernelField(KIMI, "n_group", 1, "srt/models/deepseek_v2.py"),
    KernelField(KIMI, "topk_group", 1, "srt/models/deepseek_v2.py"),
    KernelField(KIMI, "topk_method", "noaux_tc", "srt/models/deepseek_v2.py"),
    KernelField(KIMI, "scoring_func", "sigmoid", "srt/models/deepseek_v2.py"),
    KernelField(KIMI, "routed_scaling_factor", 2.827, "srt/models/deepseek_v2.py"),
    KernelField(QWEN36, "head_dim", 256, "srt/configs/model_config.py"),
    KernelField(
        QWEN36, "num_attention_heads/num_key_value_heads", 6,
        "kernels/ops/attention/decode_attention.py", "kv_group_num",
    ),
    KernelField(QWEN36, "linear_key_head_dim", 128, "srt/layers/attention/linear/gdn_backend.py"),
    KernelField(
        QWEN36, "linear_value_head_dim", 128, "srt/layers/attention/linear/gdn_backend.py"
    ),
    KernelField(
        QWEN36, "linear_num_value_heads/linear_num_key_heads", 3,
        "srt/configs/qwen3_next.py", "n_groups=self.linear_num_key_heads",
    ),
    KernelField(QWEN36, "linear_conv_kernel_dim", 4, "srt/configs/qwen3_next.py"),
    KernelField(QWEN36, "full_attention_interval", 4, "srt/configs/qwen3_next.py"),
    KernelField(QWEN36, "mamba_ssm_dtype", "float32", "srt/configs/mamba_utils.py"),
    KernelField(QWEN36, "attn_output_gate", True, "srt/models/qwen3_5.py"),
    KernelField(QWEN36, "partial_rotary_factor", 0.25, "srt/models/qwen3_5.py"),
    KernelField(
        QWEN36, "max_position_embeddings", 262144, "srt/utils/hf_transformers/common.py"
    ),
    KernelField(
        QWEN36, "rope_parameters.mrope_section", [11, 11, 10],
        "srt/layers/rotary_embedding/factory.py", "mrope_section",
    ),
    KernelField(
        QWEN36, "rope_parameters.mrope_interleaved", True,
        "srt/layers/rotary_embedding/factory.py", "mrope_interleaved",
    ),
    KernelField(
        QWEN36, "rope_parameters.rope_theta", 10_000_000.0, "srt/models/qwen3_5.py", "rope_theta"
    ),
    KernelField(DFLASH, "head_dim", 128, "srt/models/dflash.py"),
    KernelField(
        DFLASH, "num_attention_heads/num_key_value_heads", 4,
        "kernels/ops/attention/extend_attention.py", "kv_group_num",
    ),
]
# fmt: on
# each twin kind, the real model it stands for
TWIN_OF = {"kimi_k25": KIMI, "kimi_k25_text": KIMI, "kimi_k25_nvfp4": KIMI, "qwen3_5": QWEN36}
# EAGLE3.1's MLA layer reads the target's attention fields (models/kimi_k25_eagle3.py)
EAGLE3_FROM_TARGET = ("kv_lora_rank", "q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
                      "v_head_dim", "max_position_embeddings", "rope_scaling")  # fmt: skip
RECIPES = ("kimi26-ep4-dflash", "kimi26-tp8-eagle3-b300", "qwen36-27b-tp1-dflash")


def _sglang_source() -> Path:
    (package,) = sorted(SGLANG_VENV.glob("lib/python3*/site-packages/sglang"))
    return package


def value(config: dict[str, object], field: str) -> object:
    """`field` of a config: a key, a dotted path, or the ratio "a/b" of two head counts."""
    if "/" in field:
        top, bottom = field.split("/")
        numerator, denominator = config[top], config[bottom]
        assert isinstance(numerator, int) and isinstance(denominator, int)
        return numerator / denominator
    found: object = config
    for key in field.split("."):
        assert isinstance(found, dict), (field, key)
        found = found[key]
    return found


def _text(folder: Path) -> dict[str, object]:
    config = json.loads((folder / "config.json").read_text())
    found: dict[str, object] = config.get("text_config", config)
    return found


@pytest.fixture(scope="module")
def twins(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Twins]:
    """The twins of the recipes that run on a GPU or in the dry-start, by model kind."""
    specs = [twin_for(load_recipe(name)) for name in RECIPES] + [KIMI_TEXT_TWIN]
    made = ensure_specs(specs, cache_dir=tmp_path_factory.mktemp("twin-hub"))
    return {spec.model_kind: twin for spec, twin in zip(specs, made, strict=True)}


def test_every_field_is_read_where_the_table_says() -> None:
    """The table cites SGLang: each file exists in the pinned engine and reads the field."""
    source = _sglang_source()
    for row in FIELDS:
        path = source / row.read_in
        assert path.is_file(), row
        reads = row.reads or row.field
        assert reads in path.read_text(), f"{row.read_in} does not read {reads}"


def test_each_twin_carries_the_real_values_a_kernel_reads(twins: dict[str, Twins]) -> None:
    for kind, real in TWIN_OF.items():
        text = _text(twins[kind].model_dir)
        rows = [row for row in FIELDS if row.model == real]
        assert len(rows) >= 12
        for row in rows:
            assert value(text, row.field) == row.real, (kind, row.field)
    # what stays scaled: the twin is small
    kimi = _text(twins["kimi_k25_text"].model_dir)
    assert kimi["num_hidden_layers"] == 4 and kimi["hidden_size"] == 64


def test_each_drafter_has_the_real_drafters_attention_and_its_targets_context(
    twins: dict[str, Twins],
) -> None:
    drafters = [t for t in twins.values() if t.drafter_dir is not None]
    assert len(drafters) == 3  # Kimi's DFlash and EAGLE3, Qwen3.6's DFlash
    for twin in drafters:
        assert twin.drafter_dir is not None
        draft, target = _text(twin.drafter_dir), _text(twin.model_dir)
        assert draft["max_position_embeddings"] == target["max_position_embeddings"], twin
        if draft["architectures"] == ["DFlashDraftModel"]:
            for row in (r for r in FIELDS if r.model == DFLASH):
                assert value(draft, row.field) == row.real, (twin.drafter_repo, row.field)
        else:
            for field in EAGLE3_FROM_TARGET:
                assert draft[field] == target[field], (twin.drafter_repo, field)


DRAFT_START = """
import json, sys
from sglang.srt.configs.model_config import ModelConfig
out = []
for spec in sys.argv[1:]:
    target_dir, draft_dir = spec.split("|")
    target = ModelConfig(target_dir)
    row = {"draft": draft_dir, "target_context": target.context_len}
    try:  # as the draft worker builds it (managers/tp_worker.py): the target's context
        draft = ModelConfig(draft_dir, is_draft_model=True, context_length=target.context_len)
        row["draft_context"] = draft.context_len
    except ValueError as exc:
        row["refused"] = str(exc)
    if target.attention_arch.name == "MLA":
        row["mla"] = [target.kv_lora_rank, target.qk_rope_head_dim, target.qk_nope_head_dim,
                      target.v_head_dim]
    out.append(row)
print(json.dumps(out))
"""


def _draft_start(pairs: list[tuple[Path, Path]]) -> list[dict[str, object]]:
    done = subprocess.run(
        [str(engine_python()), "-c", DRAFT_START, *(f"{t}|{d}" for t, d in pairs)],
        capture_output=True, text=True, timeout=300, check=False,
        env={"SGLANG_USE_CPU_ENGINE": "1", "HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    rows: list[dict[str, object]] = json.loads(done.stdout.strip().splitlines()[-1])
    return rows


def test_sglangs_draft_worker_check_accepts_every_drafter_and_refuses_a_short_one(
    twins: dict[str, Twins], tmp_path: Path
) -> None:
    """SGLang's own ModelConfig, built for each drafter as its draft worker builds it (the
    check that refused every DFlash server on the H100, 2026-12-08), and for a copy of one
    whose context is the old twins' 4096: refused, as then."""
    kimi = twins["kimi_k25"]
    assert kimi.drafter_dir is not None
    short = tmp_path / "short-drafter"
    short.mkdir()
    for item in kimi.drafter_dir.iterdir():
        (short / item.name).write_bytes(item.read_bytes())
    config = json.loads((short / "config.json").read_text())
    (short / "config.json").write_text(json.dumps(dict(config, max_position_embeddings=4096)))
    pairs = [(t.model_dir, t.drafter_dir) for t in twins.values() if t.drafter_dir is not None]
    rows = _draft_start([*pairs, (kimi.model_dir, short)])
    *served, refused = rows
    for row in served:
        assert "refused" not in row, row
        assert row["draft_context"] == row["target_context"] == 262144, row
    assert "Target model's context_length (262144)" in str(refused["refused"])
    assert served[0]["mla"] == [512, 64, 128, 128]  # what the triton MLA kernel compiles for
