"""repro's SGLang simulator: an SGLang-compatible HTTP server that runs on a CPU.

It answers SGLang 0.5.x's HTTP API (native /generate and friends, the OpenAI routes,
/metrics) with a continuous-batching timing model and a speculative-decoding acceptance model
whose numbers come from a profile (`profiles/*.json`), so tests, the demo and what-if runs can
exercise launch, health gating, benchmarks and acceptance measurement without a GPU. It is
labelled as simulated wherever SGLang's responses leave room for it.

It needs only the standard library and aiohttp (3.8 and newer), because it is copied into
images that carry nothing else: `python3 -m sglang.launch_server <argv>` reaches it through the
`sglang` shim in `shim/` (see shim/README.md). Entry points: `python -m repro.sim <argv>` and
`repro sim serve`.
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """Run the simulator with SGLang's command line (`sys.argv[1:]` when argv is None)."""
    from repro.sim.launch import main as _main

    return _main(argv)


__all__ = ["main"]
