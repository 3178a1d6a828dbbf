#!/usr/bin/env bash
# gpu-check.sh: every GPU check of docs/cuda.md in one command, on a machine with an NVIDIA
# GPU and a build made with -Dcuda=enabled.  It makes its own test clips and random
# weights, runs each step under a time limit with one log per step, and ends with one
# summary table (step, ok/FAIL/skip, detail).  Steps:
#   meson-test       meson test (all suites)
#   selftest         gpunet-selftest, fp32 and fp16 x CUDA graphs on and off x batch 1/4/8
#   selftest-quick   (QUICK=1) every model at batch 4, graphs on, and GPUNet-0 at batch 1 with
#                    plain launches, fp32 and fp16 each
#   selftest-dw-direct  the self-test with the direct depthwise kernel for every shape
#   selftest-options    the self-test with the options that await a measurement on:
#                    nhwcpad, nhwcstrip, nhwctune, pdl (both paths, fp32 and fp16)
#   backend-ops      tests/test_backend_ops cuda: the op harness on the CUDA backend against
#                    cpu-ref (what of the self-test it covers: docs/cuda.md)
#   backend-ops-all  the same with `cuda-all`: also fp16, the NHWC network, its options
#   memcheck, racecheck, synccheck   compute-sanitizer on the self-test (gpunet-0)
#   bench            batch-1 latency of MODELS in fp16 and fp32 (gpunet-bench), compared
#                    with the "Latency, batch 1" table of docs/cuda.md: > 10 % slower fails
#   bench-ab         every model fp16: the NHWC network against the default, each of its
#                    options (nhwcpad, nhwcstrip, nhwctune) and pdl=on against without (--ab pairs;
#                    AB_SPECS lists them); a run that would pass the step's limit is not
#                    started (AB_RUN_S: the seconds assumed for the first, default 30), and
#                    the detail says how many of the runs were measured
#   layers-nhwc      per-op GPU times of LAYER_MODELS (GPUNet-2, P1, D1): the default path
#                    against the NHWC network, and that against it with nhwcpad and nhwcstrip
#   bench-sweep      batch sweep and per-op times of gpunet-0
#   pipeline         seconds from PLAYING to EOS of nvh264dec alone and with gpunetclassify
#   streams          8 x 1080p nvh264dec streams: one shared engine at batch 8 against 8
#                    unshared elements and the decoders alone (frames/s)
#   element-batch, element-regions, element-interval, element-resolution, element-two,
#   element-cycles   gpunetclassify on CUDA memory (nvh264dec's; cudaupload's for regions
#                    and cycles): batch-size 4, two regions per frame, interval 5, a
#                    mid-stream resolution change, two elements in one pipeline, 50
#                    PLAYING->NULL cycles
#   element-nvmm     the DeepStream wheel's nvv4l2decoder feeding gpunetclassify NVMM
#                    frames: records equal to the CUDA-memory path's (docs/deepstream.md)
#   soak             SOAK_MIN minutes (default 10) of classification, host RSS and GPU
#                    memory sampled every SOAK_EVERY s (default: 40 samples): both flat
#   tag              gpunet-tag --backend cuda (CUDA memory, fp32) against --backend cpu
#   pytorch          tools/pytorch_baseline.py (needs torch), fp16/fp32 batch 1, and
#                    TensorRT fp16 at batch 1 and 8 when the tensorrt module imports
#   cpu-threads      gpunet-bench --backend cpu --threads 1,2,4,8,16 (gpunet-0)
#   graph-capture    fails when any log says a CUDA graph capture failed
# --profile short (steps graph-nodes, throughput, latency, backend-ops, selftest-quick,
# streams, then
# the gates; at most PROFILE_BUDGET_S = 480 s in all, each step's limit cut to what is
# left):
#   graph-nodes      kernel, memcpy and memset nodes of GPUNet-0 fp16's captured forward
#                    and network graphs (gpunet-bench --graph-nodes)
#   throughput       GPUNet-0 fp16 at batch 1 and 8, gpu_net_ms and images/s, 2 rounds
#   latency          the 7 models x fp16/fp32 at batch 1: ours (gpu_net_ms) and PyTorch's
#                    (tools/pytorch_baseline.py) in alternating rounds, up to ROUNDS (3)
#                    while the step's time allows, at least one
#   (streams runs the decoders alone and the shared engine only, 2 rounds)
#   then one PASS/FAIL row per target (gpu_check_lib.py profile) and the markdown table
#   for docs/cuda.md, LOG_DIR/profile.md, printed last.
# --profile options: bench-ab, selftest-options, layers-nhwc, backend-ops-all in at most
# PROFILE_BUDGET_S = 540 s (no gates: the A/B ratios and per-op tables are the result);
# after --profile short in a 15-minute lease, set PROFILE_BUDGET_S to what is left.
# Usage: scripts/gpu-check.sh [--profile short|options] [BUILD_DIR [LOG_DIR]]  (defaults: build, gpu-logs)
#   env STEPS (a subset of the names above), QUICK=1 (the short set, QUICK_STEPS below),
#       MODELS (latency runs; default all seven),
#       SOAK_MIN, SOAK_EVERY, NVIDIA_SMI (default nvidia-smi), PYTHON (default python3),
#       profile: GPUNET_BENCH_EXTRA (options added to every gpunet-bench run of ours, e.g.
#       --cuda-fused), GPUNET_BENCH_ALT (when set, a second variant "alt" with these
#       options on top, timed in the same rounds, shown beside ours and not gated),
#       ROUNDS, PROFILE_BUDGET_S, GPUNET_COMMIT (the commit for the table when there is
#       no .git), TORCH_BASELINE (the PyTorch timing command; default
#       "$PYTHON tools/pytorch_baseline.py").
# Exit: 0 all passed, 1 a step failed, 2 usage, 77 no GPU (nothing checked).
set -uo pipefail
PROFILE=${PROFILE:-}
if [ "${1:-}" = --profile ]; then
  PROFILE=${2:-}
  shift 2 || shift
fi
case $PROFILE in ''|short|options) ;; *) echo "gpu-check: --profile takes 'short' or 'options', not '$PROFILE'"; exit 2 ;; esac
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
BUILD=${1:-build}
LOGS=${2:-gpu-logs}
ALL_MODELS="gpunet-0 gpunet-1 gpunet-2 gpunet-p0 gpunet-p1 gpunet-d1 gpunet-d2"
ALL_STEPS="meson-test selftest backend-ops backend-ops-all selftest-dw-direct selftest-options memcheck racecheck synccheck bench bench-ab layers-nhwc
  bench-sweep
  pipeline streams element-batch
  element-regions element-interval element-resolution element-two element-nvmm element-cycles
  soak tag pytorch cpu-threads"
# QUICK=1: the steps that fit a short GPU lease (about 10 minutes): one self-test pass of
# every model at batch 4 (graphs) and GPUNet-0's at batch 1 (plain launches) instead of
# the 12 runs of selftest; memcheck (18 s on an H200) and synccheck (under 10 s there for
# GPUNet-0 fp16), not racecheck (over 225 s for that alone), no soak or meson-test
QUICK_STEPS="backend-ops selftest-quick bench pipeline streams element-batch element-regions
  element-interval element-resolution element-two element-nvmm element-cycles tag memcheck
  synccheck
  pytorch cpu-threads"
# --profile short: the claims of docs/cuda.md in at most PROFILE_BUDGET_S (8 minutes);
# --profile options: the mechanisms that wait on a measurement (each one's A/B first, then
# correct with all of them on, where the NHWC network loses), in at most 9 minutes
if [ "$PROFILE" = options ]; then
  PROFILE_STEPS="bench-ab selftest-options layers-nhwc backend-ops-all"
  PROFILE_BUDGET_S=${PROFILE_BUDGET_S:-540}
else
  PROFILE_STEPS="graph-nodes throughput latency backend-ops selftest-quick streams"
  PROFILE_BUDGET_S=${PROFILE_BUDGET_S:-480}
fi
MODELS=${MODELS:-$ALL_MODELS}
# bench-ab: one --ab pair per mechanism that waits on a measurement (":X": on the NHWC
# network); layers-nhwc: the models whose NHWC network is slower than the default path
AB_SPECS=${AB_SPECS:-"fused=2|:nhwcpad=on|:nhwcstrip=fill|:nhwctune=on|pdl=on|:pdl=on"}
LAYER_MODELS=${LAYER_MODELS:-"gpunet-2 gpunet-p1 gpunet-d1"}
if [ -n "$PROFILE" ]; then STEPS=${STEPS:-$PROFILE_STEPS}
elif [ "${QUICK:-0}" = 1 ]; then STEPS=${STEPS:-$QUICK_STEPS}; else STEPS=${STEPS:-$ALL_STEPS}; fi
SOAK_MIN=${SOAK_MIN:-10}
case $SOAK_MIN in ''|*[!0-9]*|0) echo "gpu-check: SOAK_MIN must be a whole number of minutes >= 1, not '$SOAK_MIN'"; exit 2 ;; esac
# about 40 samples whatever the duration (the flatness check needs 8 or more)
SOAK_EVERY=${SOAK_EVERY:-$(( SOAK_MIN * 60 / 40 > 0 ? SOAK_MIN * 60 / 40 : 1 ))}
NVIDIA_SMI=${NVIDIA_SMI:-nvidia-smi}
PYTHON=${PYTHON:-python3}
LIB="$PYTHON $HERE/gpu_check_lib.py"
TORCH_BASELINE=${TORCH_BASELINE:-$PYTHON $ROOT/tools/pytorch_baseline.py}
BENCH_EXTRA=${GPUNET_BENCH_EXTRA:-}
BENCH_ALT=${GPUNET_BENCH_ALT:-}
ROUNDS=${ROUNDS:-3}
case $ROUNDS in ''|*[!0-9]*|0) echo "gpu-check: ROUNDS must be a whole number >= 1, not '$ROUNDS'"; exit 2 ;; esac

if ! gpus=$("$NVIDIA_SMI" -L 2>/dev/null) || [ -z "$gpus" ]; then
  echo "gpu-check: no GPU: nothing to check ('$NVIDIA_SMI -L' lists no NVIDIA GPU)"
  exit 77
fi
TOOLS=$BUILD/tools
if [ ! -x "$TOOLS/gpunet-bench" ]; then
  echo "gpu-check: $TOOLS/gpunet-bench not found: build first (meson setup $BUILD" \
    "-Dcuda=enabled && ninja -C $BUILD), or pass the build directory"
  exit 2
fi
if ! probe=$("$TOOLS/gpunet-bench" --model gpunet-p0 --backend cuda --runs 1 --warmup 0 \
    --preprocess-runs 0 2>&1); then
  echo "gpu-check: there is a GPU ($gpus) but the CUDA backend cannot run on it:"
  echo "$probe" | tail -n 3
  exit 1
fi
mkdir -p "$LOGS/work"
LOGS=$(cd "$LOGS" && pwd)
BUILD=$(cd "$BUILD" && pwd)
TOOLS=$BUILD/tools
W=$LOGS/work
ROWS=$LOGS/rows.tsv
: > "$ROWS"
PROF=$W/profile.tsv   # the profile's measurements (gpu_check_lib.py profile reads them)
: > "$PROF"
export GST_PLUGIN_PATH_1_0=$BUILD/gst${GST_PLUGIN_PATH_1_0:+:$GST_PLUGIN_PATH_1_0}
export GST_REGISTRY_1_0=$LOGS/registry.bin
echo "gpu-check: $gpus; build $BUILD; logs $LOGS"

# step NAME LIMIT_S FUNCTION: runs FUNCTION under a time limit into LOGS/NAME.log and adds
# a row: rc 0 ok, 77 skip, else FAIL; the detail is the log's last "detail:" line (else its
# last line)
# With --profile, the limit is cut to what is left of PROFILE_BUDGET_S (less 15 s for the
# gates and the table); a step with under 10 s left is not started (FAIL).
step () {
  local name=$1 limit=$2 fn=$3
  case " $(echo $STEPS) " in *" $name "*) ;; *) return 0 ;; esac
  echo "=== $name"
  if [ -n "$PROFILE" ]; then
    local left=$((PROFILE_BUDGET_S - SECONDS - 15))
    if [ $left -lt 10 ]; then
      printf '%s\tFAIL\tnot started: %d s of the profile'"'"'s %d s left\n' "$name" $((PROFILE_BUDGET_S - SECONDS)) "$PROFILE_BUDGET_S" >> "$ROWS"
      echo "    FAIL: not started (profile budget spent)"
      return 0
    fi
    [ $left -lt "$limit" ] && limit=$left
  fi
  local t0=$SECONDS
  STEP_LIMIT=$limit timeout -k 10 "$limit" bash -c "$fn" > "$LOGS/$name.log" 2>&1
  local rc=$? result=FAIL detail
  case $rc in 0) result=ok ;; 77) result=skip ;; 124) echo "detail: over its $limit s limit" >> "$LOGS/$name.log" ;; esac
  detail=$(grep '^detail:' "$LOGS/$name.log" | tail -n 1 | sed 's/^detail: *//')
  [ -n "$detail" ] || detail=$(grep -v '^\s*$' "$LOGS/$name.log" | tail -n 1 | cut -c1-90)
  printf '%s\t%s\t%s (%d s)\n' "$name" "$result" "$detail" $((SECONDS - t0)) >> "$ROWS"
  echo "    $result: $detail"
}
export TOOLS W LOGS LIB PYTHON ROOT MODELS SOAK_MIN SOAK_EVERY NVIDIA_SMI PROF TORCH_BASELINE \
  BENCH_EXTRA BENCH_ALT ROUNDS PROFILE AB_SPECS AB_RUN_S LAYER_MODELS

# --- inputs: random gpunet-0 weights, a 1080p H.264 MP4 (300 frames), and a byte-stream
# that switches from 640x360 to 1280x720 after 60 frames
enc_opts () { case $1 in x264enc) echo "x264enc speed-preset=ultrafast" ;; *) echo "$1" ;; esac; }
"$TOOLS/gpunet-convert" --random gpunet-0 --seed 7 --output "$W/g0.safetensors" > "$W/convert.log" 2>&1
CLIP=$W/clip.mp4 RES=$W/res.h264
# the first encoder that makes both clips (nvh264enc can be listed and still fail: no
# NVENC on the GPU, or no libnvidia-encode in a container)
encoder=""
: > "$W/clip.log"
for e in nvh264enc x264enc openh264enc; do
  gst-inspect-1.0 --exists $e || continue
  E=$(enc_opts $e)
  echo "--- $e" >> "$W/clip.log"
  gst-launch-1.0 -q videotestsrc num-buffers=300 pattern=smpte ! \
    video/x-raw,width=1920,height=1080,framerate=30/1 ! $E ! h264parse ! mp4mux ! \
    filesink location="$CLIP" >> "$W/clip.log" 2>&1 || { rm -f "$CLIP"; continue; }
  : > "$RES"
  for size in 640x360 1280x720; do
    gst-launch-1.0 -q videotestsrc num-buffers=60 pattern=ball ! \
      video/x-raw,width=${size%x*},height=${size#*x},framerate=30/1 ! $E ! h264parse ! \
      video/x-h264,stream-format=byte-stream ! filesink location="$W/part.h264" >> "$W/clip.log" 2>&1 \
      && cat "$W/part.h264" >> "$RES" || { rm -f "$CLIP" "$RES"; continue 2; }
  done
  encoder=$e
  break
done
export CLIP RES
echo "inputs: encoder ${encoder:-none}; clip $( [ -s "$CLIP" ] && echo made || echo MISSING)"

# --- the profile's measurements (lines of $PROF; gpu_check_lib.py profile gates them)
# bench_kv KEY: the last KEY= value in gpunet-bench's output on stdin
bench_kv () { sed -En "s/(^|.* )$1=([0-9.]+).*/\2/p" | tail -n 1; }
# the variants timed: ours (GPUNET_BENCH_EXTRA), and alt (GPUNET_BENCH_ALT on top) when
# set; round 2, 4, ... take them in the other order
variants () { if [ -z "$BENCH_ALT" ]; then echo ours; elif [ $(($1 % 2)) = 1 ]; then echo ours alt; else echo alt ours; fi; }
vopts () { if [ "$1" = alt ]; then echo "$BENCH_EXTRA $BENCH_ALT"; else echo "$BENCH_EXTRA"; fi; }
graph_nodes () {
  local v out bad=0 n
  for v in $(variants 1); do
    out=$("$TOOLS/gpunet-bench" --model gpunet-0 --backend cuda --precision fp16 --batch 1 \
      --preprocess-runs 0 --runs 5 --warmup 2 --net-groups 0 --graph-nodes $(vopts $v) 2>&1)
    echo "--- $v: $out"
    n=$(echo "$out" | sed -En "s/^graph_nodes=(forward|network) batch=[0-9]+ kernels=([0-9]+) memcpy=([0-9]+) memset=([0-9]+) other=([0-9]+) total=([0-9]+).*/nodes $v \1 \2 \3 \4 \5 \6/p")
    [ "$(echo "$n" | grep -c .)" = 2 ] || { echo "FAILED: $v: no graph_nodes= lines"; bad=1; continue; }
    echo "$n" >> "$PROF"
  done
  echo "detail: GPUNet-0 fp16 forward graph: $(awk '$1 == "nodes" && $3 == "forward" {printf "%s %s kernels, %s memcpy, %s memset; ", $2, $4, $5, $6}' "$PROF")"
  [ $bad = 0 ]
}
throughput () {
  local r v b out net ips gms bad=0
  for r in 1 2; do for v in $(variants $r); do for b in 1 8; do
    out=$("$TOOLS/gpunet-bench" --model gpunet-0 --backend cuda --precision fp16 --batch $b \
      --preprocess-runs 0 --runs 20 --warmup 5 $(vopts $v) 2>&1)
    net=$(echo "$out" | bench_kv gpu_net_ms); ips=$(echo "$out" | bench_kv net_images_per_s)
    gms=$(echo "$out" | bench_kv gpu_ms)
    if [ -n "$net" ] && [ -n "$ips" ] && [ -n "$gms" ]; then
      echo "thru $v $b $r $net $ips $gms" >> "$PROF"
      echo "round $r $v batch $b: gpu_net_ms $net ($ips images/s), gpu_ms $gms"
    else
      echo "FAILED: round $r $v batch $b: no gpu_net_ms/gpu_ms:"; echo "$out" | tail -n 3; bad=1
    fi
  done; done; done
  echo "detail: GPUNet-0 fp16 images/s (network alone): $(awk '$1 == "thru" && $4 == 2 {printf "%s batch %s %.0f; ", $2, $3, $6}' "$PROF")"
  [ $bad = 0 ]
}
# latency: rounds of (ours [, alt], PyTorch), up to ROUNDS, a new round only when the
# last one's duration still fits the step's limit
latency_ours () {
  local v=$1 r=$2 m p out net gms
  for m in $MODELS; do for p in fp16 fp32; do
    out=$("$TOOLS/gpunet-bench" --model $m --backend cuda --precision $p --preprocess-runs 0 \
      --runs 20 --warmup 5 $(vopts $v) 2>&1)
    net=$(echo "$out" | bench_kv gpu_net_ms); gms=$(echo "$out" | bench_kv gpu_ms)
    if [ -n "$net" ] && [ -n "$gms" ]; then
      echo "lat $v $m $p $r $net $gms" >> "$PROF"
      echo "round $r $v $m $p: gpu_net_ms $net, gpu_ms $gms"
    else
      echo "FAILED: round $r $v $m $p: no gpu_net_ms/gpu_ms:"; echo "$out" | tail -n 3; return 1
    fi
  done; done
}
latency_torch () {
  local r=$1 rc
  $TORCH_BASELINE --models "$(echo $MODELS | tr ' ' ',')" --batch 1 > "$W/pytorch-round$r.txt" 2>&1
  rc=$?
  cat "$W/pytorch-round$r.txt"
  awk -v r=$r '!/^#/ && NF == 4 && $3 == 1 {print "lat torch", $1, $2, r, $4}' "$W/pytorch-round$r.txt" >> "$PROF"
  # the last line of its output says why (e.g. torch refusing a cuDNN on LD_LIBRARY_PATH)
  [ $rc = 0 ] || echo "FAILED: round $r: the PyTorch baseline exited $rc (77: no torch or no CUDA for it): $(grep -v '^[[:space:]]*$' "$W/pytorch-round$r.txt" | tail -n 1 | cut -c1-200)"
  return $rc
}
latency () {
  local r=1 t0 dur=0 v bad=0 limit=${STEP_LIMIT:-600}
  while [ $r -le "$ROUNDS" ]; do
    if [ $r -gt 1 ] && [ $((SECONDS + dur + 10)) -gt "$limit" ]; then
      echo "round $r not started: the last took $dur s, $((limit - SECONDS)) s of the step's $limit s are left"
      break
    fi
    t0=$SECONDS
    for v in $(variants $r); do latency_ours $v $r || bad=1; done
    latency_torch $r || bad=1
    dur=$((SECONDS - t0))
    echo "round $r: $dur s"
    r=$((r + 1))
  done
  echo "detail: $((r - 1)) round(s); GPUNet-0 fp16 gpu_net_ms $(awk '$1 == "lat" && $2 == "ours" && $3 == "gpunet-0" && $4 == "fp16" {printf "%s ", $6}' "$PROF")against PyTorch $(awk '$1 == "lat" && $2 == "torch" && $3 == "gpunet-0" && $4 == "fp16" {printf "%s ", $6}' "$PROF")ms"
  [ $bad = 0 ]
}
export -f bench_kv variants vopts graph_nodes throughput latency_ours latency_torch latency
step graph-nodes 60 graph_nodes
step throughput 90 throughput
step latency 200 latency

# --- builds, self-test, sanitizers, latency
step meson-test 3600 'meson test -C "'"$BUILD"'" --print-errorlogs'
selftest () {
  local bad=0 n=0
  for p in fp32 fp16; do for g in 1 0; do for b in 1 4 8; do
    n=$((n + 1))
    echo "--- precision $p, graphs $g, batch $b"
    GPUNET_CUDA=graphs=$([ $g = 1 ] && echo on || echo off) "$TOOLS/gpunet-selftest" --precision $p --batch $b || { bad=$((bad + 1)); echo "FAILED: $p graphs=$g batch=$b"; }
  done; done; done
  echo "detail: $((n - bad))/$n self-test runs passed (fp32/fp16 x graphs on/off x batch 1/4/8)"
  [ $bad -eq 0 ]
}
sanitize () {
  command -v compute-sanitizer > /dev/null || { echo "detail: skipped: compute-sanitizer not on PATH (CUDA toolkit's bin)"; return 77; }
  local extra=""
  [ "$1" = memcheck ] && extra="--leak-check full"
  GPUNET_CUDA=graphs=off compute-sanitizer --tool "$1" $extra --error-exitcode 1 \
    "$TOOLS/gpunet-selftest" --model gpunet-0 --precision all --batch 2 2>&1 | tee "$W/sanitize-$1.txt"
  local rc=${PIPESTATUS[0]}
  echo "detail: compute-sanitizer --tool $1: exit $rc; $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$W/sanitize-$1.txt" | tail -n 1)"
  return $rc
}
# the last gpu_median_ms= value gpunet-bench printed on stdin
gpu_median () { sed -n 's/.*gpu_median_ms=\([0-9.]*\).*/\1/p' | tail -n 1; }
bench () {
  local bad=0
  : > "$W/latency.txt"
  for m in $MODELS; do for p in fp16 fp32; do
    out=$("$TOOLS/gpunet-bench" --model $m --backend cuda --precision $p --preprocess-runs 0 --runs 200 --warmup 20 2>&1) || bad=1
    echo "$out"
    ms=$(echo "$out" | gpu_median)
    [ -n "$ms" ] && echo "$m $p $ms" >> "$W/latency.txt"
  done; done
  $LIB latency "$ROOT/docs/cuda.md" "$W/latency.txt" | tee "$W/latency.cmp"
  [ "${PIPESTATUS[0]}" -eq 0 ] || bad=1
  echo "detail: $(tail -n 1 "$W/latency.cmp")"
  [ $bad -eq 0 ]
}
# the opt-in fused path (issue 33) against the default, same build and run
# the mechanisms that stay only on a measured gain, each against its absence in one
# process, alternating pairs of the network alone (gpunet-bench --ab): the NHWC network
# against the default path, its options (nhwcpad, nhwcstrip, nhwctune) against the NHWC
# network without them, pdl=on on both paths
bench_ab () {
  local m spec base r row sum="" bad=0 t0 longest=${AB_RUN_S:-30} done=0 cut=""
  local total=$(( $(echo $MODELS | wc -w) * $(echo "$AB_SPECS" | tr '|' ' ' | wc -w) ))
  for m in $MODELS; do
    row=""
    for spec in $(echo "$AB_SPECS" | tr '|' ' '); do
      # a run that would pass the step's limit is not started: what was measured stays
      if [ $((SECONDS + longest + 5)) -gt "${STEP_LIMIT:-900}" ]; then cut=1; break 2; fi
      base=""; case $spec in :*) base="--cuda-fused"; spec=${spec#:} ;; esac
      t0=$SECONDS
      r=$("$TOOLS/gpunet-bench" --model $m --backend cuda --precision fp16 --preprocess-runs 0 \
        --runs 20 --warmup 2 --net-groups 0 --no-peak $base --ab $spec 2>&1 | tee -a "$W/ab.txt" | bench_kv b_over_a)
      [ $((SECONDS - t0)) -gt $longest ] && longest=$((SECONDS - t0))
      done=$((done + 1))
      [ -n "$r" ] || { echo "FAILED: $m ${base:+$base }--ab $spec: no b_over_a= line ($W/ab.txt)"; bad=1; r="-"; }
      row="$row ${base:+nhwc+}$spec $r"
    done
    echo "$m fp16 batch 1:$row"
    sum="$sum $m:$row;"
  done
  [ -n "$cut" ] && [ -n "$row" ] && echo "$m fp16 batch 1:$row (cut)" && sum="$sum $m:$row;"
  [ $done -gt 0 ] || { echo "detail: FAIL: nothing measured (MODELS '$MODELS', AB_SPECS '$AB_SPECS', limit ${STEP_LIMIT:-900} s)"; return 1; }
  echo "detail: B / A network-alone time, median of 20 alternating pairs (nhwc+X: on the NHWC network)${cut:+, $done of $total runs within the step limit}:$sum"
  [ $bad = 0 ]
}
# where the NHWC network loses: per-op GPU times of the default path and of the NHWC
# network (and with its options on), joined op by op (gpu_check_lib.py layers)
layers_nhwc () {
  local m v opts out sum="" bad=0
  for m in $LAYER_MODELS; do
    for v in default nhwc nhwc-options; do
      case $v in default) opts="" ;; nhwc) opts="--cuda-fused" ;;
        *) opts="--cuda-fused --cuda nhwcpad=on,nhwcstrip=fill" ;; esac
      "$TOOLS/gpunet-bench" --model $m --backend cuda --precision fp16 --preprocess-runs 0 \
        --per-layer --runs 50 --warmup 5 --net-groups 0 --no-peak $opts > "$W/layers-$m-$v.txt" 2>&1 \
        || { echo "FAILED: $m $v: $(tail -n 1 "$W/layers-$m-$v.txt")"; bad=1; }
    done
    echo "--- $m: default (A) against the NHWC network (B)"
    out=$($LIB layers "$W/layers-$m-default.txt" "$W/layers-$m-nhwc.txt") || bad=1
    echo "$out"
    echo "--- $m: the NHWC network (A) against it with nhwcpad=on,nhwcstrip=fill (B)"
    $LIB layers "$W/layers-$m-nhwc.txt" "$W/layers-$m-nhwc-options.txt" || bad=1
    sum="$sum $m $(echo "$out" | sed -n 's/^total: .*(\(.*\))$/\1/p')"
  done
  echo "detail: NHWC over default, sum of per-op GPU medians:$sum (the ops in the log)"
  [ $bad = 0 ]
}
export -f selftest sanitize gpu_median bench bench_ab layers_nhwc
step selftest 1800 selftest
# the op harness on CUDA (a few seconds of host time): its pass on a GPU is what lets
# the self-test's single-op checks it covers be trimmed (docs/cuda.md)
step backend-ops 90 'ops=$TOOLS/../tests/test_backend_ops; [ -x "$ops" ] || { echo "detail: skipped: $ops not built (a build with -Dtests=true and oneDNN)"; exit 77; }; "$ops" cuda && echo "detail: op kinds, random networks, golden and fixture networks on CUDA (fp32) against cpu-ref: passed"'
# the same in fp16, on the NHWC network and with nhwcpad, nhwcstrip, nhwctune and pdl on
step backend-ops-all 600 'ops=$TOOLS/../tests/test_backend_ops; [ -x "$ops" ] || { echo "detail: skipped: $ops not built"; exit 77; }; "$ops" cuda-all && echo "detail: the op harness in fp32, fp32+pdl, fp16, fp16 NHWC and fp16 NHWC with its options, against cpu-ref: passed"'
step selftest-quick 600 '"$TOOLS/gpunet-selftest" --precision all --batch 4 && GPUNET_CUDA=graphs=off "$TOOLS/gpunet-selftest" --model gpunet-0 --precision all --batch 1 && echo "detail: every model, fp32 + fp16 (+fused), batch 4 with graphs; GPUNet-0 at batch 1 plain: passed"'
step selftest-dw-direct 300 'GPUNET_CUDA=dwconv=direct "$TOOLS/gpunet-selftest" --precision all'
# the options that wait on a measurement, all on: the NHWC network's padded channels,
# filling strips and tuned plans, programmatic dependent launch
step selftest-options 600 'GPUNET_CUDA=nhwcpad=on,nhwcstrip=fill,nhwctune=on,pdl=on "$TOOLS/gpunet-selftest" --precision all --batch 4 --fused 2 && GPUNET_CUDA=nhwcstrip=fill,pdl=on "$TOOLS/gpunet-selftest" --precision fp16 --batch 1 --fused 2 && echo "detail: every model, fp32 and fp16, default and NHWC paths with pdl, padded channels, filling strips and tuned plans (batch 4); NHWC with filling strips and pdl at batch 1: passed"'
step memcheck 1800 'sanitize memcheck'
step racecheck 2400 'sanitize racecheck'
step synccheck 1800 'sanitize synccheck'
step bench 600 bench
step bench-ab 900 bench_ab
step layers-nhwc 300 layers_nhwc
step bench-sweep 300 'for p in fp16 fp32; do "$TOOLS/gpunet-bench" --model gpunet-0 --backend cuda --precision $p --preprocess-runs 0 --batch-sweep --runs 50 --warmup 5 && "$TOOLS/gpunet-bench" --model gpunet-0 --backend cuda --precision $p --preprocess-runs 0 --per-layer --runs 100 --warmup 10 || exit 1; done'

# --- the element on nvh264dec's CUDA memory (fp32 so results compare with the CPU's)
need_nvdec () {
  [ -s "$CLIP" ] || { echo "detail: skipped: no H.264 encoder made the test clip"; return 77; }
  gst-inspect-1.0 --exists nvh264dec || { echo "detail: skipped: no nvh264dec (GStreamer's nvcodec plugin)"; return 77; }
}
DEC="filesrc location=$CLIP ! qtdemux ! h264parse ! nvh264dec"
CLS="gpunetclassify model=gpunet-0 checkpoint=$W/g0.safetensors backend=cuda precision=fp32"
export DEC CLS
# launch NAME ARGS...: gst-launch -v into W/NAME.launch; checks exit 0 and CUDA caps on the
# sink pad of the element named cls
launch () {
  local name=$1; shift
  gst-launch-1.0 -v "$@" > "$W/$name.launch" 2>&1 || { echo "gst-launch failed:"; tail -n 5 "$W/$name.launch"; return 1; }
  grep -q 'cls.GstPad:sink: caps = video/x-raw(memory:CUDAMemory)' "$W/$name.launch" || { echo "FAILED: no CUDA memory on cls's sink pad"; grep 'cls.GstPad:sink: caps' "$W/$name.launch" | head -n 2; return 1; }
}
lines () { [ -f "$1" ] && wc -l < "$1" || echo 0; }
element_batch () {
  need_nvdec || return $?
  launch batch1 $DEC ! $CLS name=cls json-output=$W/b1.jsonl ! fakesink sync=false || return 1
  launch batch4 $DEC ! $CLS name=cls batch-size=4 json-output=$W/b4.jsonl ! fakesink sync=false || return 1
  [ "$(lines $W/b4.jsonl)" -eq 300 ] || { echo "detail: FAIL: $(lines $W/b4.jsonl) records for 300 frames"; return 1; }
  $LIB lines "$W/b4.jsonl" "$W/b1.jsonl" --tol 1e-3
}
element_interval () {
  need_nvdec || return $?
  launch interval $DEC ! $CLS name=cls interval=5 json-output=$W/int.jsonl ! fakesink sync=false || return 1
  local total inferred
  total=$(lines $W/int.jsonl)
  inferred=$(grep -c '"inferred":true' $W/int.jsonl)
  # interval=5: one frame classified, its result carried to the next 5 (every 6th inferred)
  echo "detail: $total records, $inferred inferred (expect 300 and 50)"
  [ "$total" -eq 300 ] && [ "$inferred" -eq 50 ]
}
element_resolution () {
  need_nvdec || return $?
  launch res filesrc location=$RES ! h264parse ! nvh264dec ! $CLS name=cls json-output=$W/res.jsonl ! fakesink sync=false || return 1
  local w640 w1280 dec recs got
  w640=$(grep -c 'cls.GstPad:sink: caps = .*width=(int)640' $W/res.launch)
  w1280=$(grep -c 'cls.GstPad:sink: caps = .*width=(int)1280' $W/res.launch)
  # the decoder alone on the same stream: a frame it does not output is not the
  # element's to classify, one it outputs must have a record
  gst-launch-1.0 -v filesrc location=$RES ! h264parse ! nvh264dec ! fakesink silent=false > "$W/res-dec.launch" 2>&1
  dec=$(grep -c 'chain ' "$W/res-dec.launch")
  recs=$(lines $W/res.jsonl)
  # the element numbers the buffers it receives: the highest number + 1 is how many came in
  got=$(sed -n 's/.*"frame":\([0-9]*\),.*/\1/p' $W/res.jsonl | sort -n | tail -n 1)
  echo "detail: $recs records of ${got:+$((got + 1))} frames the element numbered; the decoder alone outputs $dec of the 120 frames; caps at 640 wide: $w640, at 1280: $w1280"
  [ "$recs" -eq "$dec" ] && [ "$dec" -gt 0 ] && [ "$w640" -gt 0 ] && [ "$w1280" -gt 0 ]
}
# NVMM (issue 45): the PyPI wheel's nvv4l2decoder decodes the same clip into
# video/x-raw(memory:NVMM) CUDA surfaces that gpunetclassify reads in place; its records
# (one region record per surface, roi-id = the surface's index 0 without nvstreammux)
# must equal the CUDA-memory path's (nvh264dec) within the self-test tolerance.  The
# wheel comes from tests/gst/nvds-libs.sh's cache (pip download on first use).
element_nvmm () {
  need_nvdec || return $?
  local libs
  libs=$(sh "$ROOT/tests/gst/nvds-libs.sh" sh -c 'echo "$GPUNET_NVDS_LIB_DIR"') || {
    echo "detail: skipped: the DeepStream wheel cannot be fetched"; return 77; }
  export GST_PLUGIN_PATH_1_0=$GST_PLUGIN_PATH_1_0:$libs LIBV4L2_PLUGIN_DIR=$libs/v4l_plugins
  export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  gst-inspect-1.0 --exists nvv4l2decoder || { echo "detail: skipped: the wheel's nvv4l2decoder does not load here"; return 77; }
  gst-launch-1.0 -v filesrc location=$CLIP ! qtdemux ! h264parse ! nvv4l2decoder ! \
    $CLS name=cls nvds-lib-dir=$libs json-output=$W/nvmm.jsonl ! fakesink sync=false \
    > "$W/nvmm.launch" 2>&1 || { echo "gst-launch failed:"; tail -n 5 "$W/nvmm.launch"; return 1; }
  grep -q 'cls.GstPad:sink: caps = video/x-raw(memory:NVMM)' "$W/nvmm.launch" || { echo "detail: FAIL: no NVMM memory on cls's sink pad"; return 1; }
  launch nvmm-ref $DEC ! $CLS name=cls json-output=$W/nvmm-ref.jsonl ! fakesink sync=false || return 1
  # the surface's region record stands for the frame's
  sed 's/"roi-id":0,/"roi-id":-1,/' "$W/nvmm.jsonl" > "$W/nvmm-frames.jsonl"
  [ "$(lines $W/nvmm-frames.jsonl)" -eq 300 ] || { echo "detail: FAIL: $(lines $W/nvmm-frames.jsonl) NVMM records for 300 frames"; return 1; }
  $LIB lines "$W/nvmm-frames.jsonl" "$W/nvmm-ref.jsonl" --tol 1e-3
}
element_two () {
  need_nvdec || return $?
  launch two $DEC ! $CLS name=cls json-output=$W/two-a.jsonl ! $CLS name=cls2 share-engine=false json-output=$W/two-b.jsonl ! fakesink sync=false || return 1
  [ "$(lines $W/two-a.jsonl)" -eq 300 ] || { echo "detail: FAIL: first element wrote $(lines $W/two-a.jsonl) of 300"; return 1; }
  $LIB lines "$W/two-a.jsonl" "$W/two-b.jsonl" --tol 1e-3
}
# run_s: gst-launch's "Execution ended after" (PLAYING to EOS, start-up excluded)
pipeline () {
  need_nvdec || return $?
  local a b
  for i in 1 2; do
    gst-launch-1.0 $DEC ! fakesink sync=false > "$W/dec.launch" 2>&1 || return 1
    gst-launch-1.0 $DEC ! ${CLS/precision=fp32/precision=fp16} ! fakesink sync=false > "$W/cls.launch" 2>&1 || return 1
    a=$(sed -n 's/^Execution ended after \([0-9]*\):\([0-9]*\):\([0-9.]*\)$/\1 \2 \3/p' "$W/dec.launch" | awk '{print $1*3600+$2*60+$3}')
    b=$(sed -n 's/^Execution ended after \([0-9]*\):\([0-9]*\):\([0-9.]*\)$/\1 \2 \3/p' "$W/cls.launch" | awk '{print $1*3600+$2*60+$3}')
    echo "run $i: nvh264dec alone ${a:-?} s, with gpunetclassify fp16 ${b:-?} s (300 frames of 1080p)"
  done
  echo "detail: 300 frames: decoder alone ${a:-?} s, with gpunetclassify fp16 ${b:-?} s (second run)"
}
# streams: 8 copies of the clip, each nvh264dec ! queue ! gpunetclassify (fp16) in one
# gst-launch: one shared engine at batch-size 8, against 8 unshared elements at batch 1
# (and at batch-size 8 each) and the 8 decoders alone (docs/streams.md); two rounds,
# seconds PLAYING to EOS
streams8 () {
  need_nvdec || return $?
  local r cfg d i t props t_decoders=? t_shared=? t_shared2=? t_unshared=? t_unshared8=?
  local cfgs="decoders shared unshared unshared8"
  # --profile: the decoders alone against the shared engine, and the shared engine with
  # two passes in flight (shown, not gated)
  [ -n "$PROFILE" ] && cfgs="decoders shared shared2"
  for r in 1 2; do for cfg in $cfgs; do
    case $cfg in
      shared) props="batch-size=8" ;;
      shared2) props="batch-size=8 passes-in-flight=2 max-in-flight=16" ;;
      unshared) props="share-engine=false" ;;
      unshared8) props="share-engine=false batch-size=8" ;;
    esac
    d=""
    for i in 0 1 2 3 4 5 6 7; do
      d="$d filesrc location=$CLIP ! qtdemux ! h264parse ! nvh264dec ! "
      [ $cfg = decoders ] || d="$d queue ! ${CLS/precision=fp32/precision=fp16} $props json-output=$W/st-$cfg-$i.jsonl ! "
      d="$d fakesink sync=false"
    done
    rm -f $W/st-$cfg-*.jsonl
    gst-launch-1.0 $d > "$W/streams-$cfg.launch" 2>&1 || { echo "gst-launch failed ($cfg):"; tail -n 5 "$W/streams-$cfg.launch"; return 1; }
    t=$(sed -n 's/^Execution ended after \([0-9]*\):\([0-9]*\):\([0-9.]*\)$/\1 \2 \3/p' "$W/streams-$cfg.launch" | awk '{print $1*3600+$2*60+$3}')
    [ -n "$t" ] || { echo "detail: FAIL: no 'Execution ended' line from gst-launch ($cfg)"; return 1; }
    echo "round $r $cfg $t s, $(awk -v t="$t" 'BEGIN {if (t > 0) printf "%.0f", 2400 / t; else print "?"}') frames/s"
    if [ $cfg != decoders ]; then for i in 0 1 2 3 4 5 6 7; do
      [ "$(lines $W/st-$cfg-$i.jsonl)" -eq 300 ] || { echo "detail: FAIL: $cfg stream $i wrote $(lines $W/st-$cfg-$i.jsonl) of 300 records"; return 1; }
    done; fi
    eval "t_$cfg=$t"
    echo "streams $cfg $r $t" >> "$PROF"
  done; done
  if [ -n "$PROFILE" ]; then
    echo "detail: 8 x 300 frames of 1080p (round 2): decoders alone $t_decoders s, one shared engine at batch 8 $t_shared s (passes-in-flight=2: $t_shared2 s); shared/decoders frames/s $(awk -v a="$t_decoders" -v b="$t_shared" 'BEGIN {printf "%.2f", a / b}')x"
    return 0
  fi
  echo "detail: 8 x 300 frames of 1080p (round 2): decoders alone $t_decoders s, one shared engine at batch 8 $t_shared s, 8 unshared $t_unshared s (at batch-size 8 each: $t_unshared8 s); shared/unshared frames/s $(awk -v a="$t_unshared" -v b="$t_shared" 'BEGIN {printf "%.2f", a / b}')x"
}
export -f need_nvdec launch lines element_batch element_interval element_resolution element_two element_nvmm pipeline streams8
step pipeline 300 pipeline
step streams 300 streams8
step element-batch 300 element_batch
step element-regions 300 '"$TOOLS/gpunet-element-check" regions --model gpunet-0 --checkpoint "$W/g0.safetensors" --frames 100'
step element-interval 300 element_interval
step element-resolution 300 element_resolution
step element-two 300 element_two
step element-nvmm 300 element_nvmm
step element-cycles 600 '"$TOOLS/gpunet-element-check" cycles --model gpunet-0 --checkpoint "$W/g0.safetensors" --cycles 50'

# --- SOAK_MIN minutes of 1080p NV12 frames through cudaupload ! gpunetclassify batch-size 4
soak () {
  gst-inspect-1.0 --exists cudaupload || { echo "detail: skipped: no cudaupload"; return 77; }
  gst-launch-1.0 -v videotestsrc pattern=ball ! video/x-raw,format=NV12,width=1920,height=1080 ! \
    cudaupload ! "video/x-raw(memory:CUDAMemory)" ! $CLS batch-size=4 ! fakesink sync=false > "$W/soak.launch" 2>&1 &
  local pid=$! end=$((SECONDS + SOAK_MIN * 60))
  echo "# seconds rss_kib gpu_mib (gst-launch pid $pid)" > "$W/soak.txt"
  while [ $SECONDS -lt $end ] && kill -0 $pid 2>/dev/null; do
    sleep "$SOAK_EVERY"
    local rss gpu
    rss=$(ps -o rss= -p $pid | tr -d ' ')
    gpu=$("$NVIDIA_SMI" --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | awk -F', *' -v p=$pid '$1 == p {print $2}')
    # in a container the process may not be listed: the GPU's total in use instead
    [ -n "$gpu" ] || gpu=$("$NVIDIA_SMI" --query-gpu=memory.used --format=csv,noheader,nounits | head -n 1)
    [ -n "$rss" ] && echo "$SECONDS $rss ${gpu:-0}" >> "$W/soak.txt"
  done
  kill -0 $pid 2>/dev/null || { echo "detail: FAIL: the pipeline ended early"; tail -n 5 "$W/soak.launch"; return 1; }
  kill -INT $pid; wait $pid
  grep -q 'GpunetClassify:[^.]*\.GstPad:sink: caps = video/x-raw(memory:CUDAMemory)' "$W/soak.launch" || { echo "detail: FAIL: the element did not get CUDA memory"; return 1; }
  cat "$W/soak.txt"
  $LIB flat "$W/soak.txt"
}
export -f soak
step soak $((SOAK_MIN * 60 + 120)) soak

# --- gpunet-tag: CUDA memory against system memory + the CPU backend
tag () {
  need_nvdec || return $?
  local base="--model gpunet-0 --checkpoint $W/g0.safetensors --segments --frames --show-caps"
  "$TOOLS/gpunet-tag" $base --backend cuda --precision fp32 -o "$W/tag-gpu.jsonl" "$CLIP" 2> "$W/tag-gpu.err" || { cat "$W/tag-gpu.err"; return 1; }
  "$TOOLS/gpunet-tag" $base --backend cpu -o "$W/tag-cpu.jsonl" "$CLIP" 2> "$W/tag-cpu.err" || { cat "$W/tag-cpu.err"; return 1; }
  cat "$W/tag-gpu.err"
  grep -q 'decoding into CUDA memory' "$W/tag-gpu.err" && grep "input caps: video/x-raw(memory:CUDAMemory)" "$W/tag-gpu.err" | grep -q '(decoder nvh264dec)' || { echo "detail: FAIL: the tagger did not classify nvh264dec's CUDA memory"; return 1; }
  $LIB records "$W/tag-gpu.jsonl" "$W/tag-cpu.jsonl" --tol 1e-3 | tee "$W/tag.cmp"
  local rc=${PIPESTATUS[0]}
  echo "detail: $(tail -n 1 "$W/tag.cmp")"
  return $rc
}
pytorch () {
  local trt="" rc
  $PYTHON -c 'import tensorrt' 2>/dev/null && trt=--tensorrt
  $PYTHON "$ROOT/tools/pytorch_baseline.py" --models "$(echo $MODELS | tr ' ' ',')" --batch 1 | tee "$W/pytorch.txt"
  rc=${PIPESTATUS[0]}
  [ $rc -eq 0 ] || { echo "detail: pytorch_baseline.py exit $rc"; return $rc; }
  if [ -n "$trt" ]; then
    # PyTorch fp16 at batch 1 and 8 again, beside TensorRT's fp16 engine at both
    $PYTHON "$ROOT/tools/pytorch_baseline.py" --models "$(echo $MODELS | tr ' ' ',')" --batch 1,8 --precision fp16 $trt | tee -a "$W/pytorch.txt"
  fi
  echo "detail: $(grep -vc '^#' "$W/pytorch.txt") timings${trt:+ (TensorRT included)}${trt:- (no tensorrt module: TensorRT not timed)}; see $W/pytorch.txt"
}
export -f tag pytorch
step tag 900 tag
step pytorch 1200 pytorch
step cpu-threads 900 '"$TOOLS/gpunet-bench" --model gpunet-0 --backend cpu --threads 1,2,4,8,16 --runs 30 --warmup 5 | tee "$W/threads.txt" && echo "detail: $(grep "^model=" "$W/threads.txt" | sed "s/.*threads=\([0-9]*\) median_ms=\([0-9.]*\).*/\1:\2ms/" | tr "\n" " ")"'

# a refused graph capture falls back to plain launches (correct, slower): still a failure here
captures=$(grep -l 'graph capture.*failed' "$LOGS"/*.log 2>/dev/null | xargs -r -n1 basename | tr '\n' ' ')
if [ -n "$captures" ]; then
  printf 'graph-capture\tFAIL\t"graph capture ... failed" in %s\n' "$captures" >> "$ROWS"
else
  printf 'graph-capture\tok\tno failed CUDA graph capture in any log\n' >> "$ROWS"
fi

# --profile short: one gate row per target, and the table for docs/cuda.md (printed last)
if [ "$PROFILE" = short ]; then
  commit=${GPUNET_COMMIT:-}
  if [ -z "$commit" ] && commit=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null); then
    git -C "$ROOT" diff --quiet HEAD -- 2>/dev/null || commit="$commit (with uncommitted changes)"
  fi
  [ -n "$commit" ] || commit="unknown (no .git here: set GPUNET_COMMIT)"
  gpu_name=$("$NVIDIA_SMI" --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -n 1 | sed 's/, */, driver /')
  [ -n "$gpu_name" ] || gpu_name=$(echo "$gpus" | head -n 1)
  echo
  echo "=== gates (profile $PROFILE, $SECONDS s so far)"
  $LIB profile "$PROF" --out "$LOGS/profile.md" --rows "$ROWS" --commit "$commit" \
    --gpu "$gpu_name" --date "$(date -u +%Y-%m-%d)" --opts "$BENCH_EXTRA" --alt-opts "$BENCH_ALT" \
    | tee "$LOGS/gates.txt"
fi

echo
echo "=== summary ($LOGS; skip = not possible here, e.g. no nvcodec or no torch)"
$LIB summary "$ROWS" | tee "$LOGS/summary.txt"
rc=${PIPESTATUS[0]}
if [ "$PROFILE" = short ]; then
  echo
  echo "=== table for docs/cuda.md ($LOGS/profile.md; $SECONDS s in all)"
  cat "$LOGS/profile.md" 2>/dev/null || echo "(no table: gpu_check_lib.py profile failed; see above)"
fi
exit "$rc"
