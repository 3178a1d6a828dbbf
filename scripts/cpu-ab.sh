#!/bin/sh
# cpu-ab.sh: interleaved A/B(/C...) timing of gpunet-bench variants in one run.
#
#   scripts/cpu-ab.sh [-n ROUNDS] [-m MODEL] [-r RUNS] [-b BENCH] VARIANT...
#
# A VARIANT is a space-separated list of gpunet-bench arguments (--cpu winograd=off) and
# VAR=value environment settings (names in capitals), run through env(1); "-" is the
# default (no change).  BENCH=PATH inside a variant
# runs another binary (old main against a branch).  Each round runs every variant once in
# turn (A B C .. A B C ..), so slow phases of a shared machine hit all of them alike.  Prints
# one line per run, then per variant the median over its runs of gpunet-bench's median_ms
# and min_ms, and their ratios to the first variant.  A variant listed more than once (the
# default between every other one: - A - B - C) pools its runs.  Example:
#   scripts/cpu-ab.sh -m gpunet-0 -n 5 - "--cpu winograd=onednn"
set -eu
rounds=5 model=gpunet-0 runs=30 bench=build/tools/gpunet-bench
while getopts n:m:r:b: o; do
  case $o in
    n) rounds=$OPTARG ;; m) model=$OPTARG ;; r) runs=$OPTARG ;; b) bench=$OPTARG ;;
    *) echo "usage: $0 [-n ROUNDS] [-m MODEL] [-r RUNS] [-b BENCH] VARIANT..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { echo "$0: give at least two variants ('-' is the default)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "model=$model rounds=$rounds runs=$runs load: $(cut -d' ' -f1-3 /proc/loadavg)"
r=0
while [ $r -lt "$rounds" ]; do
  v=0
  for variant in "$@"; do
    # a variant given more than once (the default between each other one, say) pools its
    # runs under its first position
    f=0
    for w in "$@"; do [ "$w" = "$variant" ] && break; f=$((f + 1)); done
    envs="" args="" bin=$bench
    [ "$variant" = "-" ] || for w in $variant; do
      case $w in
        BENCH=*) bin=${w#BENCH=} ;;
        [A-Z]*=*) envs="$envs $w" ;;
        *) args="$args $w" ;;
      esac
    done
    # shellcheck disable=SC2086
    line=$(env $envs "$bin" --model "$model" --threads 2 --runs "$runs" --warmup 3 \
      --preprocess-runs 0 $args 2>&1 | grep '^model=' | tail -n 1)
    med=$(echo "$line" | sed -n 's/.*median_ms=\([0-9.]*\).*/\1/p')
    min=$(echo "$line" | sed -n 's/.*min_ms=\([0-9.]*\).*/\1/p')
    [ -n "$med" ] || { echo "$0: variant '$variant' printed no result" >&2; exit 1; }
    echo "$med $min" >> "$tmp/$f"
    echo "round $r variant $f ($variant): median_ms=$med min_ms=$min"
    v=$((v + 1))
  done
  r=$((r + 1))
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
v=0
for variant in "$@"; do
  [ -f "$tmp/$v.done" ] || [ ! -f "$tmp/$v" ] && { v=$((v + 1)); continue; }
  touch "$tmp/$v.done"
  python3 - "$tmp/$v" "$tmp/0" "$variant" <<'EOF'
import statistics, sys
def meds(path):
    rows = [list(map(float, l.split())) for l in open(path)]
    return statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows)
me, mi = meds(sys.argv[1])
m0, i0 = meds(sys.argv[2])
print(f"{sys.argv[3]!r}: median_ms={me:.2f} ({me / m0:.3f}) min_ms={mi:.2f} ({mi / i0:.3f})")
EOF
  v=$((v + 1))
done
