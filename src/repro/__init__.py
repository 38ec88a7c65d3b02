"""repro: reproducible SGLang + speculative-decoding deployments.

This top-level module stays import-light (standard library only) because the simulator
package `repro.sim` is copied into container images that carry no other dependency.
"""

from __future__ import annotations

from functools import cache


@cache
def _installed_version() -> str:
    from importlib import metadata  # ~50 ms: paid by what records the version, not by every command

    try:
        return metadata.version("repro")
    except metadata.PackageNotFoundError:  # a copied source tree (e.g. inside an image)
        return "0.0.0+unknown"


def __getattr__(name: str) -> str:
    """`repro.__version__`, looked up on first use (PEP 562)."""
    if name == "__version__":
        return _installed_version()
    raise AttributeError(f"module 'repro' has no attribute {name!r}")
