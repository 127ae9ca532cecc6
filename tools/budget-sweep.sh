#!/usr/bin/env bash
# The budget sweep behind docs/recompute.md's before/after tables: `memplan plan --budget B` on every
# bundled batch-32 training export (AlexNet and VGG aside: half their arena is below one op's working
# set) at B = 0.4, 0.5, 0.6 and 0.7 of its arena without a budget, one line each:
#   graph  fraction  exit-code  wall-seconds  recompute-overhead-%  arena-bytes  step-s  budget-note
# (step-s: the makespan where an offloader timed the plan, else the step's op costs with recomputation:
# the report's steps_cost where it has one, else compute_cost + recompute_cost. The three columns of
# docs/offload.md's stop-78 table are this sweep with FRACS="0.5 0.7" and --deterministic, then with
# --offloader default --bandwidth 12e9 added, then with --checkpointer default as well.)
# Usage: tools/budget-sweep.sh MEMPLAN [extra `memplan plan` flags, e.g. --deterministic, or
#        --offloader default --bandwidth 12e9 for the offload sweep of docs/offload.md]
# (FRACS="0.5 0.6" picks the fractions; CASES="googlenet:0.4 inception_v3:0.7" picks graph:fraction
# pairs instead.) Compare two binaries by running it for each, one after the other on an idle
# machine: with the clock, a case can give either of two plans from run to run. For times, alternate
# them case by case (what docs/recompute.md's stop 68 figures did, two rounds):
#   for r in 1 2; do for c in googlenet:0.4 inception_v3:0.6; do for b in OLD NEW; do
#     CASES=$c tools/budget-sweep.sh $b --deterministic; done; done; done
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "$1")
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
field() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r.get('$1', 0))" "$2" 2>/dev/null || echo 0; }
for f in data/models/*-train-b32.json.gz; do
  n=$(basename "$f" -train-b32.json.gz)
  case $n in alexnet | vgg11 | vgg16) continue ;; esac
  fracs=${FRACS:-0.4 0.5 0.6 0.7}
  if [ -n "${CASES:-}" ]; then
    fracs=""
    for c in $CASES; do [ "${c%%:*}" = "$n" ] && fracs="$fracs ${c#*:}"; done
    [ -n "$fracs" ] || continue
  fi
  "$bin" plan "$f" -q --report-json "$tmp/free.json"
  arena=$(field arena_bytes "$tmp/free.json")
  for fr in $fracs; do
    b=$(python3 -c "print(int($arena * $fr))")
    rm -f "$tmp/r.json"
    s=$(date +%s.%N)
    rc=0
    "$bin" plan "$f" -q --budget "$b" --report-json "$tmp/r.json" "$@" 2>/dev/null || rc=$?
    e=$(date +%s.%N)
    python3 - "$n" "$fr" "$rc" "$s" "$e" "$tmp/r.json" <<'PY'
import json, sys
n, fr, rc, s, e, path = sys.argv[1:]
try:
    r = json.load(open(path))
except Exception:
    r = {}
note = next((x for x in r.get('notes', []) if x.startswith('budget:')), '')
print(f"{n}\t{fr}\t{rc}\t{float(e) - float(s):.2f}\t{r.get('overhead', 0) * 100:.3f}\t{r.get('arena_bytes', 0)}\t{r.get('makespan', 0) or r.get('steps_cost', r.get('compute_cost', 0) + r.get('recompute_cost', 0))}\t{note}")
PY
  done
done
