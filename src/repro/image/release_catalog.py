"""Extracting a release's option catalog from its wheel, on the CPU, without an image.

A release wheel holds SGLang's parser (`ServerArgs.add_cli_args`) as Python source: it is
unzipped, put first on the path of the CPU engine's Python (`.venv-sglang`, whose CPU
stand-ins let SGLang import without its native kernels) and read by the image build's own
`write-manifest.py --catalog-only`, so a shipped catalog and an image's manifest are made by
the same code. The release date (what a nightly's stand-in is chosen by) is the newest file
date inside the wheel: the day the release was built.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import zipfile
from datetime import date
from pathlib import Path
from typing import Any

from repro import fileread
from repro.errors import ReproError
from repro.fsutil import write_atomic
from repro.progress import Progress, quiet
from repro.recipe.argv_check import catalog_file_name
from repro.schema.option_catalog import Catalog

WRITE_MANIFEST = Path(__file__).parent / "context" / "write-manifest.py"
# pip download and the import of the unzipped wheel together; 0.5.23 takes ~15 s on 2 cores
EXTRACT_DEADLINE_S = 600


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def download_wheel(version: str, python: Path, into: Path) -> Path:
    """`pip download --no-deps sglang==VERSION` with the engine's Python (its wheel tag)."""
    command = [str(python), "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
    command += ["--quiet", f"sglang=={version}", "-d", str(into)]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=EXTRACT_DEADLINE_S)
    except subprocess.TimeoutExpired:
        raise ReproError(
            f"pip download sglang=={version} did not finish in {EXTRACT_DEADLINE_S} s",
            hint="check the package index is reachable (pip config list)",
        ) from None
    wheels = sorted(into.glob(f"sglang-{version}-*.whl"))
    if result.returncode != 0 or not wheels:
        raise ReproError(
            f"no sglang {version} wheel: {_last_line(result.stderr)}",
            hint="name a released version (pip index versions sglang)",
        )
    return wheels[0]


def wheel_build_date(wheel: Path) -> str:
    """The newest file date inside the wheel (YYYY-MM-DD): the day the release was built."""
    with zipfile.ZipFile(wheel) as archive:
        newest = max(info.date_time for info in archive.infolist())
    return date(*newest[:3]).isoformat()


def catalog_at(site: Path, python: Path) -> dict[str, Any]:
    """The JSON form of the catalog of the SGLang found first on `site` (a folder put ahead
    of `python`'s own packages), as `write-manifest.py --catalog-only` reads it."""
    with tempfile.TemporaryDirectory(prefix="repro-catalog-") as tmp:
        output = Path(tmp) / "catalog.json"
        env = {**os.environ, "PYTHONPATH": str(site)}
        command = [str(python), str(WRITE_MANIFEST), "--catalog-only", "--output", str(output)]
        try:
            result = subprocess.run(
                command, capture_output=True, text=True, env=env, timeout=EXTRACT_DEADLINE_S
            )
        except subprocess.TimeoutExpired:
            raise ReproError(
                f"reading SGLang's options from {site} took over {EXTRACT_DEADLINE_S} s"
            ) from None
        if result.returncode != 0 or not output.is_file():
            raise ReproError(
                f"{site}: SGLang's parser did not import: {_last_line(result.stderr)}",
                hint=f"run {python} with PYTHONPATH={site} to see why",
            )
        where = f"the catalog of {site}"
        data = fileread.read_json(output, where, follow_links=False)
    if not isinstance(data, dict):
        raise ReproError(f"{where}: a {type(data).__name__}, not an SGLang option catalog")
    return data


def catalog_of_wheel(wheel: Path, python: Path) -> dict[str, Any]:
    """The JSON form of the wheel's option catalog (with `released` and `source`)."""
    with tempfile.TemporaryDirectory(prefix="repro-wheel-") as tmp:
        site = Path(tmp)
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
        data = catalog_at(site, python)
    version = data.get("sglang_version")
    return {
        "sglang_version": version,
        "released": wheel_build_date(wheel),
        "source": f"sglang {version} wheel ({wheel.name}), ServerArgs.add_cli_args",
        "flags": data["flags"],
        "builtin_speculative_algorithms": data["builtin_speculative_algorithms"],
        "env": data.get("env") or [],
        "model_architectures": data.get("model_architectures") or [],
    }


def extract_release_catalog(
    version: str, python: Path, into: Path, on_progress: Progress = quiet
) -> Path:
    """Write `into/sglang-<version>.json`, the catalog of the release wheel of `version`."""
    if not python.is_file():
        raise ReproError(
            f"no Python at {python} to import SGLang's parser with",
            hint="scripts/ensure-sglang installs the CPU engine into .venv-sglang/, "
            "or pass --python",
        )
    with tempfile.TemporaryDirectory(prefix="repro-wheels-") as tmp:
        on_progress(f"downloading the sglang {version} wheel")
        wheel = download_wheel(version, python, Path(tmp))
        on_progress(f"reading ServerArgs.add_cli_args of {wheel.name}")
        data = catalog_of_wheel(wheel, python)
    if data["sglang_version"] != version:
        raise ReproError(f"the sglang {version} wheel says it is {data['sglang_version']}")
    Catalog.from_dict(data, origin=f"sglang {version} wheel")  # refuse what repro cannot read
    target = into / catalog_file_name(version)
    write_atomic(target, json.dumps(data, indent=1) + "\n")
    return target
