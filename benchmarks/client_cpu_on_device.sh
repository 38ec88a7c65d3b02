#!/bin/bash
# benchmarks/bench_client_cpu.py on a machine without network (the lent H200 host), side by
# side with SGLang 0.5.23's bench_serving (Python client) and its Rust client.
#
#   benchmarks/client_cpu_on_device.sh bundle DIR WHEEL PY311_PREFIX   (here, with network)
#   benchmarks/client_cpu_on_device.sh run DIR OUT_FILE [bench_client_cpu.py options]  (there)
#
# The bundle: this checkout's src/benchmarks/tests support (repo/), cp312 wheels of what
# repro's client and bench_serving's client need beyond that machine's python3 (whl/), the
# SGLang wheel's Python files and its Rust bench extension (sgl.zip; never committed), and a
# relocatable CPython 3.11 for that cp311 extension (py311.tgz). bench_serving imports with
# benchmarks/sglang_import_stubs.py as its sitecustomize.
set -euo pipefail
cmd=$1 dir=$2
case $cmd in
bundle)
  wheel=$(realpath "$3") prefix=$4 here=$(cd "$(dirname "$0")/.." && pwd)
  mkdir -p "$dir/repo/tests/bench" "$dir/whl"
  dir=$(realpath "$dir")
  cp -r "$here/src" "$here/benchmarks" "$dir/repo/"
  cp -r "$here/tests/support" "$here/tests/conftest.py" "$dir/repo/tests/"
  cp "$here/tests/bench/__init__.py" "$here/tests/bench/simserver.py" "$dir/repo/tests/bench/"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$dir/whl" \
    msgspec==0.23.0 httptools==0.9.0 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types \
    typing-inspection orjson pybase64 dill
  # the transformers SGLang 0.5.23 pins, for bench_serving alone
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$dir/whl-bench" transformers==5.19.0
  tmp=$(mktemp -d)
  (cd "$tmp" && unzip -q "$wheel" 'sglang/*' -x 'sglang/multimodal_gen/*' 'sglang/test/*' &&
   { find sglang -name '*.py' -o -name '*.json' -o -name '*.jinja' | grep -v /test/
     echo sglang/srt/rust_extensions/_bench.cpython-311-x86_64-linux-gnu.so; } |
   zip -q -9 "$dir/sgl.zip" -@)
  rm -rf "$tmp"
  (cd "$prefix" && tar czf "$dir/py311.tgz" \
    --exclude='lib/python3.11/test' --exclude='lib/python3.11/site-packages' \
    --exclude='lib/python3.11/idlelib' --exclude='lib/python3.11/tkinter' \
    --exclude='lib/python3.11/ensurepip' --exclude='lib/python3.11/lib2to3' \
    --exclude='lib/python3.11/config-3.11-x86_64-linux-gnu' --exclude='__pycache__' \
    bin/python3.11 lib/libpython3.11.so.1.0 lib/python3.11)
  du -sh "$dir" ;;
run)
  out=$(realpath "$3"); shift 3
  dir=$(realpath "$dir") w=/tmp/client-cpu
  export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
  pip() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir "$@"; }
  pip --target $w/site "$dir"/whl/*.whl
  pip --target $w/sitebench "$dir"/whl-bench/*.whl
  mkdir -p $w/py311 $w/sgx $w/stub
  tar xzf "$dir/py311.tgz" -C $w/py311
  python3 -m zipfile -e "$dir/sgl.zip" $w/sgx
  cp "$dir/repo/benchmarks/sglang_import_stubs.py" $w/stub/sitecustomize.py
  printf '#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' "$w/stub:$w/sgx:$w/sitebench:$w/site" \
    >$w/benchpy
  printf '#!/bin/sh\nPYTHONHOME=%s LD_LIBRARY_PATH=%s exec %s "$@"\n' \
    "$w/py311" "$w/py311/lib" "$w/py311/bin/python3.11" >$w/py311/run
  chmod +x $w/benchpy $w/py311/run
  cd "$dir/repo"
  export PYTHONPATH=$w/site:$PWD/src:$PWD
  { echo "machine: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(python3 --version)"
    date -u
    $w/benchpy -W ignore -c "import sglang.benchmark.serving" 2>&1 | grep -v stubbed | tail -5
    python3 benchmarks/bench_client_cpu.py --bench-python $w/benchpy \
      --rust-so $w/sgx/sglang/srt/rust_extensions/_bench.cpython-311-x86_64-linux-gnu.so \
      --rust-python $w/py311/run "$@"
  } 2>&1 | tee "$out" ;;
esac
