#!/usr/bin/env bash
# FP8 Lab — packaging check (issue 8 §5). As root on Debian 12:
#   1. configures a Release build without CUDA (so dpkg-shlibdeps never meets libcudart) and
#      builds the .deb and .tgz with CPack;
#   2. checks the package: Depends line, the files it must hold (binaries, .desktop, icon,
#      AppStream metainfo, default experiment), desktop-file / AppStream validation;
#   3. installs it with apt (dpkg -i as fallback), then from the INSTALLED paths runs
#      `fp8lab-cli --version`, the default experiment (shortened unless FP8LAB_FULL_DEFAULT=1:
#      1 epoch on 2000 images — the full one takes minutes), a GEMM experiment + inspect, its views
#      through `fp8lab-cli render` (which runs the installed fp8lab-render), and `fp8lab --grab`
#      under Xvfb (a real X server, not the offscreen platform);
#   4. removes the package again (also on failure) and checks nothing is left in /usr.
# Environment: BUILD_DIR (default <repo>/build-pkg), FP8LAB_JOBS (default nproc),
#              KEEP_INSTALLED=1 to leave the package installed.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$repo/build-pkg}"
jobs="${FP8LAB_JOBS:-$(nproc)}"
work="$(mktemp -d /tmp/fp8lab-test-install.XXXXXX)"
step() { echo "== $*"; }
die() { echo "test-install: FAIL: $*" >&2; exit 1; }

if [ "$(id -u)" != 0 ]; then die "run as root (installs a package)"; fi
if dpkg -s fp8lab >/dev/null 2>&1; then die "fp8lab is already installed; remove it first (apt-get remove fp8lab)"; fi

step "configure + build ($build, no CUDA, no tests)"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr \
  -DFP8LAB_WITH_CUDA=OFF -DFP8LAB_BUILD_TESTS=OFF -DFP8LAB_BUILD_BENCHMARKS=OFF -DFP8LAB_ASAN=OFF >/dev/null
cmake --build "$build" -j "$jobs"

step "cpack (DEB + TGZ)"
(cd "$build" && cpack -G "DEB;TGZ" >/dev/null)
deb="$(ls "$build"/fp8lab_*.deb | head -n1)"
tgz="$(ls "$build"/fp8lab-*-Linux.tar.gz | head -n1)"
[ -f "$deb" ] || die "no .deb produced in $build"
[ -f "$tgz" ] || die "no .tar.gz produced in $build"
echo "package: $deb ($(du -h "$deb" | cut -f1)), $tgz"

step "package contents and metadata"
dpkg-deb -I "$deb" > "$work/control"
sed -n '/Package:/,$p' "$work/control"
grep -q '^ Depends:.*libqt6core6' "$work/control" || die "Depends does not name libqt6core6 (dpkg-shlibdeps)"
grep -q '^ Depends:.*libhdf5' "$work/control" || die "Depends does not name the HDF5 library"
grep -q '^ Depends:.*qt6-qpa-plugins' "$work/control" || die "Depends does not name qt6-qpa-plugins (the GUI's platform plugins)"
grep -q '^ Depends:.*libasan' "$work/control" || die "Depends does not name libasan (fp8lab-h5check is built with AddressSanitizer)"
if grep -q 'cuda' "$work/control"; then die "the package depends on CUDA"; fi
dpkg-deb -c "$deb" | awk '{print $6}' > "$work/files"
for f in ./usr/bin/fp8lab ./usr/bin/fp8lab-cli ./usr/bin/fp8lab-render ./usr/libexec/fp8lab/fp8lab-h5check \
         ./usr/share/applications/io.github.fp8lab.FP8Lab.desktop \
         ./usr/share/metainfo/io.github.fp8lab.FP8Lab.metainfo.xml \
         ./usr/share/icons/hicolor/scalable/apps/io.github.fp8lab.FP8Lab.svg \
         ./usr/share/fp8lab/experiments/default.json; do
  grep -qx "$f" "$work/files" || die "package lacks $f"
done
# The Python module (built when python3-dev and pybind11-dev are present, as install-deps.sh makes sure).
grep -qx './usr/lib/python3/dist-packages/fp8lab/__init__.py' "$work/files" || die "package lacks the Python module fp8lab"
grep -q '^./usr/lib/python3/dist-packages/fp8lab/_core\..*\.so$' "$work/files" || die "package lacks fp8lab/_core*.so"
tar -tzf "$tgz" > "$work/tgz-files"
for b in fp8lab fp8lab-cli fp8lab-render; do
  grep -q "bin/$b\$" "$work/tgz-files" || die "the .tar.gz lacks bin/$b"
done
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$repo/installers/linux/io.github.fp8lab.FP8Lab.desktop"
fi
if command -v appstreamcli >/dev/null; then
  appstreamcli validate --no-net --pedantic "$repo/installers/linux/io.github.fp8lab.FP8Lab.metainfo.xml" ||
    appstreamcli validate --no-net "$repo/installers/linux/io.github.fp8lab.FP8Lab.metainfo.xml"
fi

remove_pkg() {
  if [ "${KEEP_INSTALLED:-0}" != 1 ] && dpkg -s fp8lab >/dev/null 2>&1; then
    step "remove"
    apt-get remove -y -qq fp8lab >/dev/null 2>&1 || dpkg -r fp8lab
  fi
}
trap 'remove_pkg; rm -rf "$work"' EXIT

step "install"
if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" >"$work/apt.log" 2>&1; then
  cat "$work/apt.log"
  echo "apt-get could not install it; trying dpkg -i (dependencies must be present)"
  dpkg -i "$deb"
fi
dpkg -s fp8lab | grep -q '^Status: install ok installed' || die "dpkg does not list fp8lab as installed"

cd "$work"  # nothing below may find the build tree by accident
cli=/usr/bin/fp8lab-cli
gui=/usr/bin/fp8lab
render=/usr/bin/fp8lab-render
[ -x "$cli" ] && [ -x "$gui" ] && [ -x "$render" ] || die "binaries not installed in /usr/bin"
if ldd "$cli" "$gui" "$render" | grep -q 'not found'; then
  ldd "$cli" "$gui" "$render" | grep 'not found'
  die "unresolved libraries"
fi
if ldd "$cli" "$render" | grep -q "$build"; then die "fp8lab-cli or fp8lab-render links into the build tree"; fi
# The CLI needs Qt Core only; the desktop app's libraries are fp8lab-render's.
if readelf -d "$cli" | grep NEEDED | grep -Eqi 'Qt6(Widgets|Gui|Concurrent|Svg|PrintSupport)|qcustomplot'; then
  readelf -d "$cli" | grep NEEDED
  die "fp8lab-cli links a GUI library"
fi

step "import fp8lab (the installed module, Debian's python3)"
/usr/bin/python3 - <<'EOF'
import numpy as np
import fp8lab
assert fp8lab.__file__.startswith("/usr/lib/python3/dist-packages/fp8lab/"), fp8lab.__file__
# OCP OFP8 v1.0: 448 is E4M3FN's max finite, code 0x7E
assert fp8lab.encode(np.array([448.0], np.float32), "E4M3FN").tolist() == [0x7E]
r = fp8lab.gemm(np.ones((4, 32), np.float32), np.ones((32, 8), np.float32), accumulation="hopper_fp8")
assert (r.d == 32.0).all(), r.d
print("fp8lab", fp8lab.version, "from", fp8lab.__file__)
EOF

step "fp8lab-cli --version"
v="$("$cli" --version)"
echo "$v"
[[ "$v" == "fp8lab-cli "[0-9]* ]] || die "unexpected --version output: $v"

step "default experiment"
config=/usr/share/fp8lab/experiments/default.json
if [ "${FP8LAB_FULL_DEFAULT:-0}" = 1 ]; then
  "$cli" run "$config" --out "$work/default.h5"
else
  # Same experiment (3 runs + GEMM on trained weights), shortened: 1 epoch on 2000 images.
  /usr/bin/python3 - "$config" "$work/short.json" <<'EOF'
import json, sys
c = json.load(open(sys.argv[1]))
c["train_limit"] = 2000
c["test_limit"] = 500
c["defaults"]["epochs"] = 1
c["gemm_on_trained_weights"]["rows"] = 100
json.dump(c, open(sys.argv[2], "w"), indent=1)
EOF
  if [ -d /usr/share/datasets/fashion-mnist ] || [ -n "${FP8LAB_FASHION_MNIST_DIR:-}" ]; then
    "$cli" run "$work/short.json" --out "$work/default.h5" -q
  else
    echo "(dataset-fashion-mnist not installed: the package Recommends it) — expecting a clear error"
    if "$cli" run "$work/short.json" --out "$work/default.h5" -q 2>"$work/err"; then die "ran without the data set"; fi
    grep -qi 'fashion' "$work/err" || die "the error does not name the data set: $(cat "$work/err")"
  fi
fi
if [ -f "$work/default.h5" ]; then
  "$cli" inspect "$work/default.h5" > "$work/inspect.txt"   # not piped into head: SIGPIPE + pipefail
  head -n 12 "$work/inspect.txt"
  "$cli" inspect "$work/default.h5" --json | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); r=d["runs"]; assert len(r) >= 3, r; print("runs:", [x["id"] for x in r])'
fi

step "a file that crashes libhdf5 is refused by the installed CLI when opened as untrusted (fp8lab-h5check)"
crash="$repo/tests/fuzz/known-libhdf5-crashes/H5Aiterate2-H5A__close-segv.h5"
set +e
"$cli" --untrusted inspect "$crash" >"$work/crash.out" 2>"$work/crash.err"
rc=$?
set -e
cat "$work/crash.err"
[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || die "fp8lab-cli inspect of a crafted file ended with status $rc"
grep -q 'separate checking process' "$work/crash.err" || die "the crafted file was not refused by the checking process"
[ "$(/usr/libexec/fp8lab/fp8lab-h5check --features)" = memory-checked ] || die "the installed fp8lab-h5check is not memory-checked"
# A file that only the memory checker catches (libhdf5 copies from past a block without faulting).
set +e
"$cli" --untrusted inspect "$repo/tests/fuzz/known-libhdf5-crashes/H5A__compact_build_table-read-past-block.memcheck.h5" >/dev/null 2>"$work/crash2.err"
rc=$?
set -e
cat "$work/crash2.err"
[ "$rc" = 2 ] && grep -q 'memory checker caught it' "$work/crash2.err" || die "the read-past-block file was not refused by the memory checker (status $rc)"

step "GEMM experiment from the installed CLI"
echo '{"type": "gemm", "m": 64, "k": 128, "n": 32, "seed": 5, "format": "E4M3FN", "scaling": "te_current"}' > "$work/gemm.json"
"$cli" run "$work/gemm.json" --out "$work/gemm.h5" -q
"$cli" inspect "$work/gemm.h5" >/dev/null

step "the GEMM run's views from the installed CLI (fp8lab-cli render runs /usr/bin/fp8lab-render)"
env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM "$cli" render "$work/gemm.h5" --png "$work/views" --size 800x500 \
  >"$work/views.txt" 2>"$work/views.err" || { cat "$work/views.err"; die "fp8lab-cli render failed"; }
cat "$work/views.txt"
grep -q -- '-heatmap\.png$' "$work/views.txt" && [ -s "$work/views/compare.png" ] || die "fp8lab-cli render wrote no heatmap / comparison"

step "fp8lab --grab under Xvfb"
session_arg=()
[ -f "$work/default.h5" ] && session_arg=("$work/default.h5")
[ ${#session_arg[@]} -eq 0 ] && session_arg=("$work/gemm.h5")
HOME="$work" xvfb-run -a -s "-screen 0 1600x1000x24" env QT_QPA_PLATFORM=xcb \
  "$gui" --grab "$work/window.png" "${session_arg[@]}" 2>"$work/gui.err" || { cat "$work/gui.err"; die "fp8lab --grab failed"; }
[ -s "$work/window.png" ] || die "no screenshot written"
/usr/bin/python3 - "$work/window.png" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read(24)
assert b[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", b[16:24])
assert w >= 400 and h >= 300, (w, h)
print("screenshot %dx%d" % (w, h))
EOF

remove_pkg
trap 'rm -rf "$work"' EXIT
[ ! -e /usr/bin/fp8lab-cli ] && [ ! -e /usr/bin/fp8lab-render ] && [ ! -e /usr/share/applications/io.github.fp8lab.FP8Lab.desktop ] || die "files left after remove"
step "test-install: OK"
