#!/bin/sh
# Renders every view of the desktop app to PNG files for review.
#
#   tests/ui/screenshots.sh [BUILD_DIR] [OUT_DIR]
#
# BUILD_DIR defaults to ./build, OUT_DIR to BUILD_DIR/screenshots. Runs the real app under Xvfb
# (xvfb-run, 1400x900x24) with `fp8lab --grab FILE --view NAME`; without xvfb-run it falls back to
# Qt's offscreen platform (same pixels, no X server needed). Opens the bundled default session
# when the build generated one. Exit status: 0 when every view was written.
set -eu
BUILD=${1:-build}
OUT=${2:-$BUILD/screenshots}
APP=$BUILD/app/fp8lab
[ -x "$APP" ] || { echo "screenshots.sh: $APP not found (build the fp8lab target first)" >&2; exit 2; }
mkdir -p "$OUT"
VIEWS="bits numberline codes learn learn:0 learn:1 learn:2 learn:3 learn:4 learn:5 learn:6 learn:7 amax scales heatmap compare"
if command -v xvfb-run >/dev/null 2>&1 && [ "${FP8LAB_SCREENSHOTS_OFFSCREEN:-0}" != 1 ]; then
  run() { xvfb-run -a -s "-screen 0 1400x900x24" "$APP" "$@"; }
  how="Xvfb"
else
  run() { QT_QPA_PLATFORM=offscreen "$APP" "$@"; }
  how="offscreen"
fi
status=0
for v in $VIEWS; do
  f="$OUT/$(echo "$v" | tr ':' '-').png"
  if run --grab "$f" --view "$v" 2>"$OUT/.log" && [ -s "$f" ]; then
    echo "$f"
  else
    echo "screenshots.sh: view $v failed:" >&2
    cat "$OUT/.log" >&2
    status=1
  fi
done
# The window without a session (what a first start without the bundled session looks like).
f="$OUT/no-session.png"
if run --grab "$f" --no-default-session 2>"$OUT/.log" && [ -s "$f" ]; then echo "$f"; else status=1; fi
rm -f "$OUT/.log"
echo "screenshots.sh: rendered with $how into $OUT" >&2
exit $status
