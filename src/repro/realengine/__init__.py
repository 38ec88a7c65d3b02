"""SGLang 0.5.23's own engine on the host, for tests and benchmarks against real SGLang code.

A stage of the product, not test code (it sits above bench in the stages' order): the CPU base
image (repro.image.cpu_base) installs its requirements and stand-ins, `repro image tiny-model`
runs its tinymodel.py, and `repro image catalog` and `repro sim serve --frontend sglang` run
its engine's Python (repro.settings.SGLANG_PYTHON).

- ``requirements-sglang-cpu.txt``: every package the CPU engine needs, pinned with hashes.
- ``standins/``: the CPU-test layer, import stand-ins for native packages that cannot load
  (data copied into the engine's environment, not imported by repro).
- ``tinymodel.py``: a seeded tiny Qwen3 + DFlash drafter, run with the engine's Python.
- ``twins.py``: tiny twins of every shipped recipe's model and drafter (``twin_for``,
  ``ensure_twins``), made by ``twingen.py`` with the engine's Python and published into the
  Hub cache.
- ``engine.py``: start the engine on a model with a deadline, stop it cleanly.
- ``servermetrics.py``, ``clientserver.py``: the server's own histograms beside repro's client
  timings, over the same requests (benchmarks/client_vs_server.py).
"""
