# env.sh: sourced by the recipes in this directory. Uses the plugin from a build
# tree when BUILD_DIR is set (or ./build exists), and the model settings from
#   MODEL       built-in name or architecture JSON (default gpunet-0)
#   CHECKPOINT  weights file (required), e.g. 0.65ms.pth.tar from NVIDIA's NGC
#   EXTRA       more gpunetclassify properties, e.g. "top-k=3 interval=4"
here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${BUILD_DIR:-}" ] && [ -d "$here/../build/gst" ]; then
  BUILD_DIR="$here/../build"
fi
if [ -n "${BUILD_DIR:-}" ]; then
  export GST_PLUGIN_PATH_1_0="$BUILD_DIR/gst${GST_PLUGIN_PATH_1_0:+:$GST_PLUGIN_PATH_1_0}"
fi
MODEL=${MODEL:-gpunet-0}
if [ -z "${CHECKPOINT:-}" ]; then
  echo "set CHECKPOINT to a GPUNet weights file (.pth.tar or .safetensors)" >&2
  echo "e.g. CHECKPOINT=0.65ms.pth.tar MODEL=gpunet-0 $0" >&2
  echo "or, with the test fixture: MODEL=tests/data/fixtures/tiny-a.json" \
    "CHECKPOINT=tests/data/fixtures/tiny-a/tiny-a.pth.tar $0" >&2
  exit 2
fi
# The recipes put $CLASSIFY unquoted into gst-launch's arguments, which split at spaces:
# gst-launch joins them again with one space each, and the quotes below keep a path's
# spaces inside its value. Filename expansion is off, so no word is taken for a pattern.
set -f
for v in "$MODEL" "$CHECKPOINT"; do
  case $v in
    *'"'* | *'  '* | *"$(printf '\t')"* | *"
"*)
      echo "'$v' holds a double quote, a tab, a line break or two spaces in a row," \
        "which the recipes cannot pass to gst-launch: rename the file or link it" \
        "under a plain name" >&2
      exit 2 ;;
  esac
done
CLASSIFY="gpunetclassify model=\"$MODEL\" checkpoint=\"$CHECKPOINT\" ${EXTRA:-}"
