"""The real `repro` CLI in a subprocess, pointed at a local Hub server."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hubserver import HubServer

REPRO = Path(sys.executable).parent / "repro"
RECIPES = Path(__file__).resolve().parents[2] / "recipes"


def hub_cli(
    tmp_path: Path, hub: HubServer, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    """huggingface_hub reads HF_* when it is imported: hence a fresh process per call."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING"))}
    full.update(
        HF_ENDPOINT=hub.endpoint,
        HF_HUB_CACHE=str(tmp_path / "hf-cache"),
        HF_HOME=str(tmp_path / "hf-home"),
        HF_HUB_DISABLE_TELEMETRY="1",
        REPRO_RECIPES_DIR=str(RECIPES),
        COLUMNS="200",
        **env,
    )
    return subprocess.run(
        [str(REPRO), *args], cwd=tmp_path, env=full, capture_output=True, text=True, timeout=120
    )
