#!/bin/bash
# `make test` N times in a row beside a CPU hog: does the suite (the real-engine verdicts
# above all) hold on a loaded machine, as CI's 2-core runners are? Prints one line per round,
# pass or fail with its pytest summary line, then the count; exits 1 when any round failed.
#
#   benchmarks/loaded_make_test.sh [ROUNDS] [HOGS]        (default 10 rounds, 2 hog processes)
#
# Run it from the project root in a fresh clone on an otherwise idle 2-core machine (it takes
# hours and keeps every core busy); each round's full output is kept in
# build/loaded_make_test/round-N.log. The hogs are busy loops at normal priority, stopped on
# exit (Ctrl-C included).
set -euo pipefail
rounds=${1:-10}
hogs=${2:-2}
logs=build/loaded_make_test
mkdir -p "$logs"

hog_pids=()
stop_hogs() {
  for pid in "${hog_pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
}
trap stop_hogs EXIT
for _ in $(seq "$hogs"); do
  (while :; do :; done) &
  hog_pids+=($!)
done
echo "cpu hog: $hogs busy loops (pids ${hog_pids[*]}) on $(nproc) cores"

failed=0
for round in $(seq "$rounds"); do
  log="$logs/round-$round.log"
  start=$(date +%s)
  if make test >"$log" 2>&1; then verdict=pass; else verdict=FAIL; failed=$((failed + 1)); fi
  summary=$(grep -E "^(=+ )?[0-9]+ (passed|failed)" "$log" | tail -1 | tr -d '=' | xargs)
  echo "round $round/$rounds: $verdict in $(($(date +%s) - start)) s (${summary:-no summary})"
done
echo "$((rounds - failed)) of $rounds rounds passed"
[ "$failed" -eq 0 ]
