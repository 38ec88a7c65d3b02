"""Run SGLang 0.5.23's Rust bench client (sglang.srt.rust_extensions._bench) from its .so alone,
as `python -m sglang.benchmark.rust_client ARGS` does (rust_client.main: argv[0] renamed, then
run_argv), without importing the sglang package (whose __init__ pulls in model tooling)."""

import importlib.machinery
import importlib.util
import sys
import time

if len(sys.argv) < 2:
    sys.exit("usage: sglang_rust_client.py PATH/_bench.cpython-311-x86_64-linux-gnu.so ARGS...")
so = sys.argv[1]
loader = importlib.machinery.ExtensionFileLoader("_bench", so)
spec = importlib.util.spec_from_file_location("_bench", so, loader=loader)
ext = importlib.util.module_from_spec(spec)
loader.exec_module(ext)
argv = ["python -m sglang.benchmark.rust_client", *sys.argv[2:]]
try:
    ext.run_argv(argv)
except SystemExit as exc:
    sys.exit(int(exc.code or 0))
finally:
    # the stream server reads this process's CPU time 20 ms after its last stream closed:
    # stay alive (idle) until then, as the Python client does while it prints its report
    time.sleep(0.5)
