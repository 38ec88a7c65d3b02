#!/bin/bash
# benchmarks/fetch_throughput.py and benchmarks/bench_client_cpu.py on a machine without
# network (the lent H200 host: 16 quiet cores), the client side by side with SGLang 0.5.23's
# bench_serving (Python client) and its Rust client.
#
#   benchmarks/on_device.sh bundle DIR SGLANG_PKG PY311_PREFIX           (here, with network)
#   [FETCH_ARGS=..] [CLIENT_ARGS=..] [SRC=..] benchmarks/on_device.sh run DIR OUT_DIR [fetch]
#       [client]                                                          (there, from DIR/repo)
#
# e.g. bundle build/i30/bundle .venv-sglang/lib/python3.11/site-packages/sglang
# /root/.pyenv/versions/3.11.7, then on the device (the run tool, carrying build/i30/bundle):
# CLIENT_ARGS="--repeats 3" bash build/i30/bundle/repo/benchmarks/on_device.sh run
# build/i30/bundle $OUT client fetch. FETCH_ARGS and CLIENT_ARGS are the benchmarks' options;
# SRC runs them with another src/ (a `git archive` of main's, for a before/after round).
#
# The bundle (~40 MB, under the 64 MiB a device call carries): this checkout's src/,
# benchmarks/ and the test servers they start (repo/); cp312 wheels of what repro, the Hub
# server and bench_serving's client need, installed and packed (site.txz; the machine's own
# numpy and torch are used); SGLang's Python files and its Rust bench extension from an
# installed sglang package folder, e.g. .venv-sglang's (sgx.txz; never committed); and the
# part of a CPython 3.11 that the cp311 extension's runner loads (py311.txz). bench_serving
# imports with benchmarks/sglang_import_stubs.py as its sitecustomize. `run` writes each
# benchmark's output, and the machine it ran on, to OUT_DIR.
set -euo pipefail
cmd=$1 dir=$2
RUNNER=benchmarks/sglang_rust_client.py
BENCH_SO=sglang/srt/rust_extensions/_bench.cpython-311-x86_64-linux-gnu.so
WHEELS=(
  # repro (fetch and the bench client) and the test Hub server
  click==8.5.1 pyyaml==6.0.4 pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0
  typing-inspection==0.4.5 typing-extensions==4.16.0 huggingface_hub==2.4.0 httpx2==2.16.2
  httpcore2==2.16.2 truststore==0.10.5 h11==0.16.0 anyio==4.16.0 sniffio==1.3.1 idna==3.20
  certifi==2026.10.19.post1 filelock==4.3.2 fsspec==2026.9.0 packaging==26.4 tqdm==4.70.1
  rich==15.0.0 markdown-it-py==4.3.0 mdurl==0.1.2 pygments==2.21.0 httptools==0.9.0
  msgspec==0.23.0 uvloop==0.23.0 aiohttp==3.14.5 multidict==7.2.1 yarl==1.25.1
  propcache==0.5.4 frozenlist==1.8.0 aiosignal==1.4.0 attrs==26.1.0 aiohappyeyeballs==2.7.1
  jinja2==3.1.6 markupsafe==3.0.4 prometheus_client==0.26.0 pytest==9.2.0 pluggy==1.7.0
  iniconfig==2.3.1
  # bench_serving's client: the transformers SGLang 0.5.23 pins, and what it imports
  transformers==5.19.0 tokenizers==0.23.2 safetensors==0.8.0 regex==2026.11.19
  typer==0.29.2 shellingham==1.5.4 requests==2.34.2 urllib3==2.8.0 charset-normalizer==3.5.3
  orjson==3.13.0 pybase64==1.5.1 dill==0.4.1
)

bundle() {  # site.txz, sgx.txz and py311.txz are kept when DIR has them (site: same WHEELS)
  local pkg=$1 prefix=$2 here tmp
  here=$(cd "$(dirname "$0")/.." && pwd)
  mkdir -p "$dir" && dir=$(realpath "$dir")
  rm -rf "$dir/repo" && mkdir -p "$dir/repo/tests/bench"
  tmp=$(mktemp -d)
  cp -r "$here/src" "$here/benchmarks" "$dir/repo/"
  cp -r "$here/tests/support" "$here/tests/hubserver" "$dir/repo/tests/"
  cp "$here/tests/bench/__init__.py" "$dir/repo/tests/bench/"
  find "$dir/repo" -name __pycache__ -prune -exec rm -rf {} +
  echo "${WHEELS[*]}" >"$tmp/site.txt"
  if ! cmp -s "$tmp/site.txt" "$dir/site.txt"; then
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$tmp/whl" "${WHEELS[@]}" \
      2> >(grep -v '^WARNING: Location' >&2)
    python3 -m pip install -q --no-deps --no-compile --no-index --target "$tmp/site" \
      --python-version 3.12 --only-binary=:all: "$tmp"/whl/*.whl \
      2> >(grep -v '^WARNING: Running' >&2)
    tar cJf "$dir/site.txz" -C "$tmp/site" . && cp "$tmp/site.txt" "$dir/site.txt"
  fi
  [[ -f $dir/sgx.txz ]] || (cd "$pkg/.." && {
    find sglang -path sglang/multimodal_gen -prune -o -path sglang/test -prune \
      -o \( -name '*.py' -o -name '*.json' -o -name '*.jinja' \) -print; echo "$BENCH_SO"; } |
    tar cJf "$dir/sgx.txz" -T -)
  # what the runner loads: the interpreter, its library and the stdlib modules it imports
  [[ -f $dir/py311.txz ]] || {
    PYTHONHOME=$prefix LD_LIBRARY_PATH=$prefix/lib "$prefix/bin/python3.11" -c '
import runpy, sys
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
for m in list(sys.modules.values()):
    print(getattr(m, "__file__", None) or "")' "$here/$RUNNER" "$pkg/../$BENCH_SO" --help |
      grep "^$prefix/lib/python3.11/" | sed "s|^$prefix/||" >"$tmp/py311.txt"
    (cd "$prefix" && { echo bin/python3.11; echo lib/libpython3.11.so.1.0
       echo lib/python3.11/os.py; echo lib/python3.11/encodings; cat "$tmp/py311.txt"; } |
     sort -u | tar cJf "$dir/py311.txz" --exclude=__pycache__ -T -)
  }
  rm -rf "$tmp"
  du -sh "$dir"
}

run() {
  local out w=/tmp/on-device py
  out=$(realpath -m "$1") && shift
  mkdir -p "$out" $w/site $w/sgx $w/py311 $w/stub $w/bin
  dir=$(realpath "$dir")
  py=$(python3 -c 'import sys; print(sys.executable)')
  if [[ ! -f $w/unpacked ]]; then
    tar xJf "$dir/site.txz" -C $w/site
    tar xJf "$dir/sgx.txz" -C $w/sgx
    tar xJf "$dir/py311.txz" -C $w/py311
    python3 -m compileall -q -j 0 $w/site "$dir/repo/src" >/dev/null || true
    touch $w/unpacked
  fi
  cp "$dir/repo/benchmarks/sglang_import_stubs.py" $w/stub/sitecustomize.py
  # what pip writes for repro's console script
  printf '#!%s\nimport sys\nfrom repro.cli import entry\nif __name__ == "__main__":\n%s\n' \
    "$py" "    sys.exit(entry())" >$w/bin/repro
  printf '#!/bin/sh\nPYTHONPATH=%s exec %s "$@"\n' "$w/stub:$w/sgx:$w/site" "$py" >$w/benchpy
  printf '#!/bin/sh\nPYTHONHOME=%s LD_LIBRARY_PATH=%s exec %s "$@"\n' \
    "$w/py311" "$w/py311/lib" "$w/py311/bin/python3.11" >$w/py311/run
  chmod +x $w/bin/repro $w/benchpy $w/py311/run
  export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 PATH=$w/bin:$PATH
  export PYTHONPATH=$w/site:${SRC:-$dir/repo/src}:$dir/repo  # SRC: another src/ to measure
  cd "$dir/repo"
  { echo "machine: $(nproc) cores,$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)," \
      "$(free -g | awk '/Mem:/ {print $2}') GiB, $("$py" --version), $(uname -r)"
    echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"; date -u
    "$py" -c 'import numpy; print("numpy", numpy.__version__)'
    "$py" -m pip list 2>/dev/null |
      grep -iE '^(numpy|torch|uvloop|transformers|huggingface.hub) ' || true
    df -h /tmp | tail -1
  } 2>&1 | tee "$out/machine.txt"
  for step in "$@"; do
    case $step in
    fetch)
      # shellcheck disable=SC2086  # options, split on spaces
      timeout 400 "$py" benchmarks/fetch_throughput.py --workdir /tmp/fetch-bench \
        ${FETCH_ARGS:-} 2>&1 |
        tee "$out/fetch.txt" || echo "fetch: failed" ;;
    client)
      { $w/benchpy -W ignore -c "import sglang.benchmark.serving" 2>&1 | grep -v stubbed | tail -5
        # shellcheck disable=SC2086
        timeout 400 "$py" benchmarks/bench_client_cpu.py --bench-python $w/benchpy \
          --rust-so "$w/sgx/$BENCH_SO" --rust-python $w/py311/run ${CLIENT_ARGS:-}
      } 2>&1 | tee "$out/client.txt" || echo "client: failed" ;;
    *) echo "unknown step $step (fetch, client)" >&2; exit 2 ;;
    esac
  done
}

case $cmd in
bundle) bundle "$(realpath "$3")" "$(realpath "$4")" ;;
run) shift 2; run "$@" ;;
*) echo "usage: $0 bundle DIR SGLANG_PKG PY311_PREFIX | run DIR OUT_DIR [fetch] [client]" >&2
   exit 2 ;;
esac
