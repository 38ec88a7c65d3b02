"""Plots and the self-contained HTML page, opened in headless Chromium."""

from __future__ import annotations

import base64
import io
import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
from click.testing import CliRunner
from matplotlib.image import imread

from repro.cli import main
from repro.report import SIMULATED, load_runs, plot_acceptance, write_plots
from repro.report.figures import png
from repro.report.latency_plots import latency_figure
from repro.runfolder import RunFolder
from tests.report.conftest import Runs
from tests.report.helpers import raw_means
from tests.support.browser import chromium, layout

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _pixels(png: bytes) -> np.ndarray:
    assert png.startswith(PNG_MAGIC)
    return np.asarray(imread(io.BytesIO(png), format="png"))


def _not_blank(pixels: np.ndarray) -> bool:
    rgb = pixels[..., :3]
    return bool(rgb.std() > 0.01 and (rgb < 0.5).any())


def test_plots_are_real_pngs(runs: Runs, tmp_path: Path) -> None:
    records = load_runs([runs.ar, runs.dflash, runs.dflash_c48])
    paths = write_plots(records, tmp_path)
    names = sorted(p.name for p in paths)
    assert names == ["acceptance.png", "latency.png", "pareto.png", "throughput.png"]
    with_base = write_plots(records, tmp_path / "base", baseline=records[0])
    assert "speedup.png" in {p.name for p in with_base}  # against a baseline only
    for path in paths:
        pixels = _pixels(path.read_bytes())
        assert pixels.shape[0] > 300 and pixels.shape[1] > 500 and _not_blank(pixels)
    assert plot_acceptance(load_runs([runs.ar])) is None  # no drafter, no accept.json


class _Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.srcs: list[str] = []
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name in ("src", "href") and value is not None:
                (self.srcs if tag == "img" else self.external).append(value)


def test_html_page_is_self_contained_and_opens_in_chromium(runs: Runs, tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    result = CliRunner().invoke(
        main,
        [
            *("report", str(runs.dflash), "--baseline", str(runs.ar), "--format", "html"),
            *("--metric", "output_throughput", "--metric", "ttft", "-o", str(page)),
        ],
    )
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "SIMULATED" in html
    for c, value in raw_means(runs.dflash, "output_throughput").items():
        assert f"{value:.1f}" in html, c
    parser = _Images()
    parser.feed(html)
    # throughput, per-user vs total, latency, speedup against the baseline, acceptance
    assert len(parser.srcs) == 5 and not parser.external
    assert "Speedup against the baseline" in html and "Latency percentiles" in html
    for title in ("TTFT", "ITL", "TPOT", "E2E"):  # a table of p50 / p90 / p99 each
        assert f"<h2>{title} (ms) at p50 / p90 / p99</h2>" in html
    for src in parser.srcs:
        prefix = "data:image/png;base64,"
        assert src.startswith(prefix)
        assert _not_blank(_pixels(base64.b64decode(src[len(prefix) :], validate=True)))

    shot = tmp_path / "shot.png"
    subprocess.run(
        [*chromium(tmp_path / "profile", 1200, 1600), f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=90,
        check=True,
    )
    pixels = _pixels(shot.read_bytes())
    assert pixels.shape[:2] == (1600, 1200)
    assert _not_blank(pixels)
    # the plots render: some rows of the screenshot hold colored (non-grey) plot lines
    rgb = pixels[..., :3]
    assert (np.ptp(rgb, axis=2) > 0.3).sum() > 200


def _sweep_of_nine(record: Path, dest: Path) -> Path:
    """A copy of `record` measured at nine concurrencies, 1 to 256 (a real recipe's sweep)."""
    shutil.copytree(record, dest)
    summary = json.loads(RunFolder(dest).summary_file.read_text())
    first = summary["levels"][0]
    summary["levels"] = [
        {
            **first,
            "max_concurrency": 2**i,
            "concurrency": 2**i,
            "repeat": 0,
            "output_throughput": 1234.567 * (i + 1),
            "valid": True,
            "reasons": [],
        }
        for i in range(9)
    ]
    RunFolder(dest).summary_file.write_text(json.dumps(summary))
    run = json.loads(RunFolder(dest).run_file.read_text())
    run["recipe_name"] = dest.name
    RunFolder(dest).run_file.write_text(json.dumps(run))
    return dest


def test_html_has_no_raw_values_and_fits_800_px_with_every_column(
    runs: Runs, tmp_path: Path
) -> None:
    page = tmp_path / "page.html"
    wide = _sweep_of_nine(runs.dflash, tmp_path / "kimi26-tp8-dflash-b200-long-context-sweep")
    run = json.loads(RunFolder(wide).run_file.read_text())  # prompts from a file: its sha256
    run["workload"]["dataset"] = "prompts.jsonl"
    run["workload"]["dataset_source"] = {"kind": "file", "path": "p.jsonl", "sha256": "ab" * 32}
    RunFolder(wide).run_file.write_text(json.dumps(run))
    paths = [str(runs.ar), str(runs.dflash), str(wide)]
    result = CliRunner().invoke(
        main, ["report", *paths, "--baseline", str(runs.ar), "--format", "html", "-o", str(page)]
    )
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert "{&#39;" not in html and "None" not in html  # no Python dict or None shown
    workload = json.loads(RunFolder(runs.ar).run_file.read_text())["workload"]
    assert f"input_len {workload['input_len']}, output_len {workload['output_len']}" in html
    assert "SIMULATED: all runs" in html
    assert "overflow-x" not in html  # no table scrolls inside the page: every column is in view
    shot = tmp_path / "shot.png"
    subprocess.run([*chromium(tmp_path / "profile", 800), f"--screenshot={shot}", page.as_uri()],
                   timeout=90, check=True, capture_output=True)  # fmt: skip
    assert _pixels(shot.read_bytes()).shape[:2] == (1000, 800)
    laid_out = layout(page, tmp_path / "profile", 800)  # the nine levels and the peak, in 800 px
    assert laid_out.width <= 800
    assert laid_out.broken == []  # no run name broken mid-word


def test_the_latency_legend_fits_and_leaves_the_simulated_mark_visible(
    runs: Runs, tmp_path: Path
) -> None:
    wide = _sweep_of_nine(runs.dflash, tmp_path / "kimi26-tp8-dflash-b200-long-context-sweep")
    loaded = load_runs([runs.ar, runs.dflash, wide])
    fig = latency_figure(loaded)
    assert fig is not None
    png(fig, loaded, layout=False)  # what plot_latency draws
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    [mark] = [t for t in fig.texts if t.get_text() == SIMULATED]
    drawn = [fig.legends[0], *(ax for ax in fig.axes)]
    if fig._suptitle is not None:
        drawn.append(fig._suptitle)
    box = mark.get_window_extent(renderer)
    for artist in drawn:
        assert not box.overlaps(artist.get_window_extent(renderer)), artist
    legend = fig.legends[0].get_window_extent(renderer)  # whole, not cut at the edges
    assert fig.bbox.x0 <= legend.x0 and legend.x1 <= fig.bbox.x1
