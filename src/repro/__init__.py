"""repro: reproducible SGLang + speculative-decoding deployments.

This top-level module stays import-light (standard library only) because the simulator
package `repro.sim` is copied into container images that carry no other dependency.
"""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("repro")
except _metadata.PackageNotFoundError:  # running from a copied source tree (e.g. inside an image)
    __version__ = "0.0.0+unknown"
