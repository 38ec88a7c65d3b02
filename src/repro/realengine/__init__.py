"""SGLang 0.5.23's own engine on the host, for tests and benchmarks against real SGLang code.

- ``requirements-sglang-cpu.txt``: every package the CPU engine needs, pinned with hashes.
- ``standins/``: the CPU-test layer, import stand-ins for native packages that cannot load
  (data copied into the engine's environment, not imported by repro).
- ``tinymodel.py``: a seeded tiny Qwen3 + DFlash drafter, run with the engine's Python.
- ``engine.py``: start the engine on a model with a deadline, stop it cleanly.
"""
