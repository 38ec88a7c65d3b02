"""A small campaign on the demo recipe (the simulator image): points that launch in seconds."""

from __future__ import annotations

import json
from pathlib import Path

CAMPAIGN = """
name: demo-caps
machine: this-box
base: {base}
matrix:
  cap:
    small: {{server.max_running_requests: 2}}
    big: {{server.max_running_requests: 16}}
{extra}
bench:
  concurrencies: [1, 4]
  input_len: 64
  output_len: 16
  dataset: chat
  prompts_per_level: 8
  warmup: 1
accept:
  prompt_sets: [chat]
  prompts: 2
  max_new_tokens: 16
slos:
  snappy: {{p90_ttft_ms: 60000}}
"""
BROKEN = '    broken: {env.REPRO_SIM_FAIL_AT_START: "CUDA out of memory"}'


def demo_campaign(tmp_path: Path, repo_root: Path, extra: str = "") -> Path:
    path = tmp_path / "demo-caps.yaml"
    path.write_text(CAMPAIGN.format(base=repo_root / "recipes" / "demo.yaml", extra=extra))
    return path


def index_of(folder: Path) -> dict[str, dict[str, object]]:
    data = json.loads((folder / "index.json").read_text())
    return {p["name"]: p for p in data["points"]}


def only_folder(root: Path) -> Path:
    [folder] = [p for p in root.iterdir() if p.is_dir()]
    return folder
