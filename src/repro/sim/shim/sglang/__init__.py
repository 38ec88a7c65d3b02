"""SGLang stand-in of repro's simulator image (not SGLang).

Laid out like SGLang's source tree (/sgl-workspace/sglang/python/sglang) so that
`python3 -m sglang.launch_server <argv>` and patches work as on a GPU image; the server itself
is `repro.sim`.
"""

from sglang.version import __version__

REPRO_SIMULATED = True

__all__ = ["REPRO_SIMULATED", "__version__"]
