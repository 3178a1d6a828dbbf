#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer targets of tests/fuzz/ with clang (fuzzer, address and
# undefined sanitizers; directly, not through meson, whose project uses gcc), seeds
# their corpora from tests/data fixtures, runs each for MINUTES, then prints what it
# found.  Every crash is replayed and named: a known defect (see KNOWN below) is
# reported apart and does not fail the run; anything else does.
#
#   scripts/fuzz.sh [MINUTES] [TARGET...]      MINUTES defaults to 1; TARGETs to all of
#                                               zip pickle safetensors checkpoint arch labels
#                                               resume scales nvbufsurface
# Environment:
#   FUZZ_SECONDS=N   seconds per target instead of MINUTES (the meson test fuzz-readers: 2)
#   FUZZ_DIR=DIR     binaries, corpora and crash files (default build-fuzz/ in the tree;
#                    corpora persist there, so a second run starts where the first stopped)
#   FUZZ_JOBS=N      libFuzzer worker processes per target (default 1)
#   CLANG=clang-14   the compiler (default: clang, else clang-14 .. clang-19)
#   GPUNET_CONVERT=  gpunet-convert, to seed the safetensors corpus (default build/tools/)
# Exit status: 0 no new crash, 1 new crashes (files listed), 77 clang or libFuzzer
# missing (a skip for meson), 2 usage or build errors.
set -u

# all in one function, so that bash has read the whole script before it runs (editing
# it during a long run cannot change what runs; see the last line)
main() {
root=$(cd "$(dirname "$0")/.." && pwd)
all_targets="zip pickle safetensors checkpoint arch labels resume scales nvbufsurface"
minutes=1
if [ $# -gt 0 ] && [[ $1 =~ ^[0-9]+$ ]]; then
  minutes=$1
  shift
fi
seconds=${FUZZ_SECONDS:-$((minutes * 60))}
targets=${*:-$all_targets}
for t in $targets; do
  case " $all_targets " in *" $t "*) ;; *) echo "fuzz.sh: unknown target '$t' (one of: $all_targets)" >&2; exit 2 ;; esac
done
dir=${FUZZ_DIR:-$root/build-fuzz}
jobs=${FUZZ_JOBS:-1}

# Known defects, fixed elsewhere: "name|extended regex matched against the replay log".
#   (none: the two defects the first runs found, the pickle bytes "(t" and a .pth
#   shape [0, 2^62, 2^62, 2^62], are fixed; their inputs are regression inputs now)
KNOWN=(
)

# ---- compiler ------------------------------------------------------------------
cc=${CLANG:-}
if [ -z "$cc" ]; then
  for c in clang clang-14 clang-15 clang-16 clang-17 clang-18 clang-19; do
    if command -v "$c" >/dev/null 2>&1; then cc=$c; break; fi
  done
fi
if [ -z "$cc" ] || ! command -v "$cc" >/dev/null 2>&1; then
  echo "fuzz.sh: SKIP: no clang found (set CLANG=...)"
  exit 77
fi
mkdir -p "$dir/obj" "$dir/bin" "$dir/tmp"
printf '#include <stdint.h>\n#include <stddef.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n){(void)d;(void)n;return 0;}\n' \
  > "$dir/tmp/probe.c"
if ! "$cc" -fsanitize=fuzzer,address,undefined "$dir/tmp/probe.c" -o "$dir/tmp/probe" \
    >"$dir/tmp/probe.log" 2>&1; then
  echo "fuzz.sh: SKIP: $cc cannot link -fsanitize=fuzzer,address,undefined (libFuzzer or the sanitizer runtimes missing):"
  tail -3 "$dir/tmp/probe.log"
  exit 77
fi

# ---- build: the readers once (instrumented), then one binary per target ------------
# The readers are plain C; json-glib is added when the sources need it and it is there.
# A symbol none of them defines (a helper file added to models/ later) is looked up in
# models/*.c, and the file defining it is compiled too.  gpunet_fail lives in kernels/.
reader_srcs="../kernels/kernel_error.c error.c json.c arch.c zoo.c labels.c crc32.c zipread.c pickle.c safetensors.c checkpoint.c scales.c"
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION: the zip reader skips its CRC-32 check, so
# mutated archives reach the pickle and tensor parsers behind it
cflags="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -I$root/models -I$root/kernels"
extra=""
if grep -qs 'json-glib' "$root"/models/*.[ch] && pkg-config --exists json-glib-1.0 2>/dev/null; then
  extra=$(pkg-config --cflags --libs json-glib-1.0)
fi
objs=""
compile_obj() {                 # compile_obj FILE.c (in models/), appends to $objs
  local s=$1 o="$dir/obj/$(basename "${1%.c}").o"
  if [ ! -f "$o" ] || [ "$root/models/$s" -nt "$o" ] || [ "$0" -nt "$o" ] \
      || [ -n "$(find "$root/models" -name '*.h' -newer "$o" -print -quit)" ]; then
    # shellcheck disable=SC2086
    if ! "$cc" $cflags -fsanitize=fuzzer-no-link $extra -c "$root/models/$s" -o "$o" \
        2>"$dir/tmp/build.log"; then
      echo "fuzz.sh: cannot compile models/$s:"; cat "$dir/tmp/build.log"; return 1
    fi
  fi
  objs="$objs $o"
}
for s in $reader_srcs; do
  if [ -f "$root/models/$s" ]; then compile_obj "$s" || exit 2; fi
done
# what a target needs besides the engine's readers (paths from the top; GLib, json-glib)
target_srcs() {                 # target_srcs TARGET -> source files
  case $1 in
    resume) echo tools/gpunet-tag-resume.c ;;
    nvbufsurface) echo gst/gstgpunetsurface.c kernels/host/preprocess.c ;;
  esac
}
target_inc="-I$root/tools -I$root/gst -I$root/kernels/host -I$root/kernels/common"
if pkg-config --exists glib-2.0 2>/dev/null; then
  extra="$extra $(pkg-config --cflags --libs glib-2.0)"
fi
for t in $targets; do
  b="$dir/bin/fuzz_$t"
  tobjs=""
  for s in $(target_srcs "$t"); do
    o="$dir/obj/extra-$(basename "${s%.c}").o"
    if [ ! -f "$o" ] || [ "$root/$s" -nt "$o" ] || [ "$root/${s%.c}.h" -nt "$o" ]; then
      # shellcheck disable=SC2086
      if ! "$cc" $cflags $target_inc -fsanitize=fuzzer-no-link $extra -c "$root/$s" \
          -o "$o" 2>"$dir/tmp/build.log"; then
        echo "fuzz.sh: cannot compile $s:"; cat "$dir/tmp/build.log"; exit 2
      fi
    fi
    tobjs="$tobjs $o"
  done
  fresh=1
  for o in $objs $tobjs "$root/tests/fuzz/fuzz_$t.c" "$root/tests/fuzz/fuzz_common.h"; do
    [ -f "$b" ] && [ "$b" -nt "$o" ] || fresh=0
  done
  [ "$fresh" = 1 ] && continue
  tries=0
  # shellcheck disable=SC2086
  while ! "$cc" $cflags $target_inc -fsanitize=fuzzer "$root/tests/fuzz/fuzz_$t.c" $objs $tobjs \
      $extra -lm -o "$b" \
      2>"$dir/tmp/build.log"; do
    added=0
    for m in $(grep -o "undefined reference to \`[A-Za-z_0-9]*'" "$dir/tmp/build.log" \
        | sed "s/.*\`//; s/'//" | sort -u); do
      f=$(grep -l "^$m (" "$root"/models/*.c 2>/dev/null | head -1)
      [ -n "$f" ] || continue
      s=$(basename "$f")
      case " $reader_srcs " in *" $s "*) continue ;; esac
      reader_srcs="$reader_srcs $s"
      compile_obj "$s" || exit 2
      added=1
    done
    tries=$((tries + 1))
    if [ "$added" = 0 ] || [ "$tries" -ge 5 ]; then
      echo "fuzz.sh: cannot build fuzz_$t:"; cat "$dir/tmp/build.log"; exit 2
    fi
  done
done

# ---- seeds: tests/data fixtures, small synthetic files, tests/fuzz/regressions ----------
# The fixtures' archives are 0.15-1.1 MB of mostly tensor bytes: one real archive of each
# kind (a training checkpoint, a bare state dict) plus tests/fuzz/make_seeds.py's files of
# a few hundred bytes with the same structure keep executions fast and mutations on the
# parsed bytes.
fix="$root/tests/data/fixtures"
seed() {                        # seed TARGET FILE...
  local t=$1; shift
  mkdir -p "$dir/corpus/$t"
  for f in "$@"; do
    [ -f "$f" ] && cp -f "$f" "$dir/corpus/$t/seed-$(basename "$f")"
  done
}
mkdir -p "$dir/seeds"
if [ ! -f "$dir/seeds/small.safetensors" ] \
    || [ "$root/tests/fuzz/make_seeds.py" -nt "$dir/seeds/small.safetensors" ]; then
  python3 "$root/tests/fuzz/make_seeds.py" "$dir/seeds" \
    || echo "fuzz.sh: make_seeds.py failed (seeding from the fixtures only)"
fi
real="$fix/tiny-a/tiny-a.pth.tar $fix/tiny-dl/tiny-dl.state_dict.pth"
# shellcheck disable=SC2086
seed zip $real "$dir"/seeds/small-*.pth*
# shellcheck disable=SC2086
seed checkpoint $real "$dir"/seeds/small-*.pth* "$dir"/seeds/small.safetensors
seed arch "$fix"/*.json
for p in "$fix"/*/*.pth.tar "$fix"/*/*.pth; do   # the pickles inside the fixtures' archives
  [ -f "$p" ] || continue
  n=$(basename "$p")
  [ -f "$dir/seeds/$n.pkl" ] && continue
  python3 - "$p" "$dir/seeds/$n.pkl" <<'EOF' 2>/dev/null
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
name = next(n for n in z.namelist() if n.endswith("data.pkl"))
open(sys.argv[2], "wb").write(z.read(name))
EOF
done
seed pickle "$dir"/seeds/*.pkl
conv=${GPUNET_CONVERT:-$root/build/tools/gpunet-convert}
if [ -x "$conv" ] && [ ! -f "$dir/seeds/tiny-dl.safetensors" ]; then
  "$conv" --checkpoint "$fix/tiny-dl/tiny-dl.pth.tar" --output "$dir/seeds/tiny-dl.safetensors" \
    >/dev/null 2>&1 || true
fi
printf '\x08\x00\x00\x00\x00\x00\x00\x00{}      ' > "$dir/seeds/empty.safetensors"
seed safetensors "$dir"/seeds/*.safetensors
# labels: the first byte is the class count minus one (see fuzz_labels.c)
{ printf '\x0f'; for i in $(seq 0 15); do printf 'label number %d\n' "$i"; done; } > "$dir/seeds/labels16.txt"
{ printf '\x02'; printf 'cat\r\n  dog \r\n\n'; } > "$dir/seeds/labels3.txt"
seed labels "$dir/seeds/labels16.txt" "$dir/seeds/labels3.txt"
# resume: the first byte picks the format (0 JSON lines, 1 CSV; see fuzz_resume.c)
{ printf '\x00'
  printf '{"type":"frame","input":"a.mp4","frame":0,"pts":0,"label_id":3,"label":"cat","score":0.5}\n'
  printf '{"type":"summary","input":"a.mp4","frames":1,"classified":1,"status":"ok","message":null}\n'
  printf '{"type":"summary","input":"b \\"x\\".mp4","status":"error","message":"no video \\u00e9"}\n'
  printf '{"type":"frame","input":"c.mp4","frame":0,"pts":0.04'; } > "$dir/seeds/resume.jsonl"
{ printf '\x01'
  printf 'type,input,frame,end_frame,pts,end,label_id,label,score,ids,labels,scores,frames,classified,duration,container_duration,wall_s,decode_fps,classify_fps,top_labels,status,message,decode_errors,frames_missing\n'
  printf 'frame,a.mp4,0,,0.000,,3,cat,0.5,3,cat,0.5,,,,,,,,,,,,\n'
  printf 'summary,a.mp4,,,,,,,,,,,1,1,0.04,0.04,0.1,10,10,cat:1,ok,,0,0\n'
  printf 'summary,"b,""x"".mp4",,,,,,,,,,,0,0,,,0.1,,,,error,"no video\nstream",0,0\n'
  printf 'frame,c.mp4,0'; } > "$dir/seeds/resume.csv"
{ printf '\x01'
  printf 'type,input,frame,end_frame,pts,end,label_id,label,score,ids,labels,scores,frames,classified,duration,container_duration,wall_s,decode_fps,classify_fps,top_labels,status,message,decode_errors,frames_missing,model,precision\n'
  printf 'frame,a.mp4,0,,0.000,,3,cat,0.5,3,cat,0.5,,,,,,,,,,,,,,\n'
  printf 'summary,a.mp4,,,,,,,,,,,1,1,0.04,0.04,0.1,10,10,cat:1,ok,,0,0,gpunet-0,fp16\n'
  printf 'frame,c.mp4,0'; } > "$dir/seeds/resume26.csv"
seed resume "$dir/seeds/resume.jsonl" "$dir/seeds/resume.csv" "$dir/seeds/resume26.csv"
# scales: an int8 scales file of two entries (models/scales.c's format)
python3 - "$dir/seeds/two.scales" <<'EOF' 2>/dev/null
import struct, sys
h = b"GPUNETS8" + struct.pack("<IIQQIfII", 1, 2, 0x1234, 0x5678, 1, 100.0, 3, 0)
e = struct.pack("<IIIIff", 2, 16, 8, 8, 0.0, 5.5) + struct.pack("<IIIIff", 5, 32, 4, 4, -0.5, 3.0)
open(sys.argv[1], "wb").write(h + e)
EOF
seed scales "$dir/seeds/two.scales"
# nvbufsurface: an NvBufSurfaceParams entry (320 bytes: gst/gpunet-nvds-abi.h), a byte
# of knobs (matrix, range, resize mode, vector code), then the pixel bytes
python3 - "$dir/seeds" <<'EOF' 2>/dev/null
import struct, sys
def entry(w, h, pitch, color, planes, data_size, offsets):
    e = bytearray(320)
    struct.pack_into("<IIIii", e, 0, w, h, pitch, color, 0)
    struct.pack_into("<I", e, 32, data_size)
    struct.pack_into("<I", e, 48, planes)
    for k in range(planes):
        struct.pack_into("<I", e, 84 + 4 * k, pitch)
        struct.pack_into("<I", e, 100 + 4 * k, offsets[k])
    return bytes(e)
px = bytes((i * 7) & 0xff for i in range(4096))
open(sys.argv[1] + "/nv12-30x20.surf", "wb").write(
    entry(30, 20, 32, 6, 2, 32 * 30, [0, 32 * 20]) + b"\x05" + px)
open(sys.argv[1] + "/rgba-17x9.surf", "wb").write(
    entry(17, 9, 80, 19, 1, 80 * 9, [0]) + b"\x10" + px)
open(sys.argv[1] + "/i420-9x7.surf", "wb").write(
    entry(9, 7, 16, 2, 3, 16 * 7 + 16 * 4 * 2, [0, 16 * 7, 16 * 11]) + b"\x28" + px)
EOF
seed nvbufsurface "$dir"/seeds/*.surf
for t in $targets; do
  mkdir -p "$dir/corpus/$t"
  if [ -d "$root/tests/fuzz/regressions/$t" ]; then
    cp -f "$root/tests/fuzz/regressions/$t"/* "$dir/corpus/$t/" 2>/dev/null || true
  fi
done

# ---- run ----------------------------------------------------------------------------
classify() {                    # classify LOG -> prints the known defect's name, or nothing
  local k
  for k in "${KNOWN[@]}"; do
    if grep -Eq "${k#*|}" "$1"; then echo "${k%%|*}"; return; fi
  done
}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# GLib 2.74's slice allocator would hide leaked json-glib nodes from LeakSanitizer
export G_SLICE=${G_SLICE:-always-malloc}
new_total=0
known_total=0
summary=""
for t in $targets; do
  b="$dir/bin/fuzz_$t"
  art="$dir/artifacts/$t"
  rm -rf "$art"
  mkdir -p "$art"
  log="$dir/fuzz_$t.log"
  echo "fuzz.sh: fuzz_$t for ${seconds}s (corpus $dir/corpus/$t)"
  # fork mode keeps going after a crash, so a known defect does not hide a new one
  dict=()
  [ -f "$root/tests/fuzz/$t.dict" ] && dict=(-dict="$root/tests/fuzz/$t.dict")
  (cd "$dir/tmp" && "$b" -fork="$jobs" -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 \
      -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 "${dict[@]}" \
      -artifact_prefix="$art/" "$dir/corpus/$t" >"$log" 2>&1)
  # the regression inputs once more, in one process: LeakSanitizer reports at exit
  # what a fork-mode worker does not always flag (a leak inside json-glib)
  if compgen -G "$root/tests/fuzz/regressions/$t/*" >/dev/null; then
    if ! (cd "$dir/tmp" && "$b" "$root/tests/fuzz/regressions/$t"/* >"$dir/regressions_$t.log" 2>&1); then
      cp -f "$dir/regressions_$t.log" "$art/regressions-replay.log"
    fi
  fi
  execs=$(grep -Eo '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | grep -Eo '[0-9]+')
  n_new=0; n_known=0; names=""
  if [ -f "$art/regressions-replay.log" ]; then
    n_new=$((n_new + 1))
    echo "fuzz.sh: NEW: fuzz_$t: a regression input fails again (log: $art/regressions-replay.log)"
    grep -Em3 'ERROR: |runtime error|SUMMARY' "$art/regressions-replay.log" | sed 's/^/    /'
  fi
  for f in "$art"/*; do
    [ -f "$f" ] || continue
    case $f in *.log) continue ;; esac
    "$b" -runs=1 "$f" >"$f.log" 2>&1
    k=$(classify "$f.log")
    if [ -n "$k" ]; then
      n_known=$((n_known + 1)); names="$names $k"
    else
      n_new=$((n_new + 1))
      echo "fuzz.sh: NEW: fuzz_$t: $f (replay log: $f.log)"
      grep -Em3 'ERROR: |runtime error|SUMMARY' "$f.log" | sed 's/^/    /'
    fi
  done
  new_total=$((new_total + n_new))
  known_total=$((known_total + n_known))
  names=$(echo "$names" | tr ' ' '\n' | sort -u | tr '\n' ' ')
  line=$(printf '%-12s execs %-10s cov %-6s new crashes %d, known %d %s' "$t" "${execs:-?}" \
    "${cov:-?}" "$n_new" "$n_known" "${names:+($names)}")
  echo "fuzz.sh: $line"
  summary="$summary$line"$'\n'
done
echo "---- fuzz summary (${seconds}s per target, $cc) ----"
printf '%s' "$summary"
echo "$new_total new crashes, $known_total known (crash files under $dir/artifacts)"
[ "$new_total" -eq 0 ]
}

main "$@"; exit $?   # on one line: bash reads no further, whatever the file holds now
