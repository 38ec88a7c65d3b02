"""repro's SGLang simulator: an SGLang-compatible HTTP server that runs on a CPU.

It answers SGLang 0.5.x's HTTP API (native /generate and friends, the OpenAI routes,
/metrics) with a continuous-batching timing model and a speculative-decoding acceptance model
whose numbers come from a profile (`profiles/*.json`), so tests, the demo and what-if runs can
exercise launch, health gating, benchmarks and acceptance measurement without a GPU. It is
labelled as simulated wherever SGLang's responses leave room for it.

It needs only the standard library and aiohttp (3.8 and newer), because it is copied into
images that carry nothing else. In such an image `shim/sglang/` becomes
`/sgl-workspace/sglang/python/sglang/` (SGLang's source layout, so patches apply as on a GPU
image) and `repro/__init__.py`, `repro/sim/` and `repro/catalogs/` (the option catalog it
parses argv with) go to another directory; with both on PYTHONPATH
(`/sgl-workspace/sglang/python:<that directory>`), `python3 -m sglang.launch_server <argv>`
runs this simulator. The shim holds `sglang/__init__.py` (`REPRO_SIMULATED = True`),
`version.py` (0.5.23), `launch_server.py`, `srt/server_args.py` (`ServerArgs.add_cli_args`
from the option catalog) and `srt/speculative/spec_info.py` (the algorithm registry the
simulator reads). Entry points: `python -m repro.sim <argv>` and `repro sim serve`.
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Run the simulator with SGLang's command line (`sys.argv[1:]` when argv is None)."""
    # deferred: launch loads aiohttp and the server, and `repro` imports this package at start
    from repro.sim.launch import main as _main

    return _main(argv)


__all__ = ["main"]
