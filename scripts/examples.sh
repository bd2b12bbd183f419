#!/usr/bin/env bash
# Builds and runs the examples against the *installed* package, as another project would:
# installs ./build to a temporary prefix, configures examples/ (a CMake project of its own)
# with -DCMAKE_PREFIX_PATH, builds the C example again with pkg-config alone, takes the
# C++, C and Python snippets out of the README, builds them too, and runs everything on
# the shared models, checking the results against the tessera CLI.
# TESSERA_BUILD_DIR picks the build folder (default ./build), TESSERA_JOBS the build jobs (2); fixtures come from
# TESSERA_SHARED_DIR (default ../shared), without which only the builds are checked.
# TESSERA_EXAMPLES_PREFIX=P uses a package already installed in P instead (e.g. the Debian
# package unpacked into a scratch root, P=ROOT/usr: tests/package/deb_test.sh), and its CLI,
# P/bin/tessera, as the reference.
set -euo pipefail
cd "$(dirname "$0")/.."
B="${TESSERA_BUILD_DIR:-build}"
SHARED="${TESSERA_SHARED_DIR:-../shared}"
PY=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "examples: FAILED: $*" >&2; exit 1; }

if [ -n "${TESSERA_EXAMPLES_PREFIX:-}" ]; then
  prefix="$(cd "$TESSERA_EXAMPLES_PREFIX" && pwd)"
  CLI="$prefix/bin/tessera"
  [ -x "$CLI" ] || fail "no $CLI"
else
  targets=(tessera_shared tessera_cli)
  if cmake --build "$B" --target help | grep tessera_python >/dev/null; then targets+=(tessera_python); fi
  cmake --build "$B" -j"${TESSERA_JOBS:-2}" --target "${targets[@]}" > "$tmp/build.log" || { cat "$tmp/build.log"; fail "building ${targets[*]}"; }
  prefix="$tmp/prefix"
  cmake --install "$B" --prefix "$prefix" >/dev/null
  CLI="$B/tessera"
fi
[ -f "$prefix/lib/cmake/Tessera/TesseraConfig.cmake" ] || fail "no TesseraConfig.cmake installed"
[ -f "$prefix/lib/pkgconfig/tessera.pc" ] || fail "no tessera.pc installed"
# The shared library, with its soname, and nothing of Tessera's static libraries.
so=$(ls "$prefix"/lib/libtessera.so.*.*.* 2>/dev/null | head -1 || true)
[ -n "$so" ] && [ -e "$prefix/lib/libtessera.so" ] || fail "no libtessera.so installed"
soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ -e "$prefix/lib/$soname" ] || fail "no $prefix/lib/$soname (the soname of $so)"
if ls "$prefix"/lib/libtessera*.a >/dev/null 2>&1; then fail "static libraries installed: $(ls "$prefix"/lib/libtessera*.a)"; fi
# Public headers must not reach into the source tree.
if grep -rn '#include "\(core\|ops\|runtime\|import\|backend\|convert\|passes\)/' "$prefix/include/tessera"; then
  fail "an installed header includes a src/ path"
fi

# The README's snippets: the ```cpp block of its C++ section, the ```c block of its C
# section and the ```python blocks of its Python section.
mkdir -p "$tmp/snippets"
"$PY" - "$tmp/snippets" <<'PYEOF'
import re, sys
text = open("README.md").read()
def block(section, lang):
    body = text.split("### " + section + "\n", 1)[1].split("\n### ", 1)[0].split("\n## ", 1)[0]
    found = re.findall(r"```" + lang + r"\n(.*?)```", body, re.S)
    if not found:
        sys.exit(f"README.md: no ```{lang} block in section '{section}'")
    return "\n".join(found)
out = sys.argv[1]
open(out + "/readme.cpp", "w").write(block("C++", "cpp"))
open(out + "/readme.c", "w").write(block("C", "c"))
open(out + "/readme.py", "w").write(block("Python", "python"))
PYEOF

cmake -S examples -B "$tmp/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
  -DTESSERA_README_SNIPPETS="$tmp/snippets" >/dev/null
cmake --build "$tmp/build" -j"${TESSERA_JOBS:-2}" >/dev/null
# The C example again, with nothing but pkg-config and the C compiler driver.
PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --exists tessera || fail "pkg-config does not find tessera"
# shellcheck disable=SC2046
# (The prefix is no folder of the dynamic loader's: the program records it, -rpath.)
cc -std=c11 -o "$tmp/classify_pc" examples/c/classify.c $(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --cflags --libs tessera) \
  -Wl,-rpath,"$prefix/lib"
# Every example links the shared library (its soname), none a copy of Tessera.
for exe in "$tmp/build/classify" "$tmp/build/generate" "$tmp/build/classify_c" "$tmp/classify_pc"; do
  readelf -d "$exe" | grep -q "(NEEDED).*\[$soname\]" || fail "$(basename "$exe") does not link $soname"
  if nm -C "$exe" | grep -q " [TtWw] tessera::Model::load"; then fail "$(basename "$exe") holds a copy of Tessera"; fi
done
echo "examples: built against the installed package in $prefix (CMake and pkg-config), linking $soname"

if [ ! -d "$SHARED/models" ]; then
  if [ "${TESSERA_REQUIRE_FIXTURES:-0}" = 1 ]; then fail "fixtures $SHARED are absent"; fi
  echo "examples: $SHARED is absent; the examples were built but not run"
  exit 0
fi
MNV2="$SHARED/models/tflite/mobilenet_v2_1.0_224_quant.tflite"
IMG="$SHARED/images/grace_hopper.bmp"
LABELS="$SHARED/labels/imagenet_labels.txt"
LLM="$SHARED/models/gguf/aidreams260K.gguf"

# C++ classify: the same top class and score as `tessera classify`.
"$tmp/build/classify" "$MNV2" "$IMG" "$LABELS" > "$tmp/classify.txt"
"$CLI" classify "$MNV2" "$IMG" --labels "$LABELS" --top 5 > "$tmp/cli_classify.txt"
top=$(head -1 "$tmp/classify.txt")
echo "classify: $top"
echo "$top" | grep -q "military uniform" || fail "classify's top class: $top"
cli_top=$(sed -n 3p "$tmp/cli_classify.txt" | awk '{print $1, $2}')
[ "$(echo "$top" | awk '{print $1, $2}')" = "$cli_top" ] || fail "classify '$top' vs the CLI '$cli_top'"
"$tmp/build/classify" "$MNV2" "$IMG" "$LABELS" rknpu | head -1 | grep -q "military uniform" || fail "classify on rknpu"

# C classify (CMake and pkg-config builds): the same index and score.
c_top=$("$tmp/build/classify_c" "$MNV2" "$IMG")
[ "$("$tmp/classify_pc" "$MNV2" "$IMG")" = "$c_top" ] || fail "the pkg-config build disagrees"
[ "$c_top" = "$(echo "$top" | awk '{print $1, $2}')" ] || fail "classify_c '$c_top' vs classify '$top'"
echo "classify_c: $c_top"

# generate: exactly what `tessera generate` prints.
"$tmp/build/generate" "$LLM" "Once upon a time" 40 > "$tmp/gen.txt" 2>/dev/null
"$CLI" generate "$LLM" -p "Once upon a time" -n 40 > "$tmp/cli_gen.txt" 2>/dev/null
cmp -s "$tmp/gen.txt" "$tmp/cli_gen.txt" || fail "generate: '$(cat "$tmp/gen.txt")' vs the CLI '$(cat "$tmp/cli_gen.txt")'"
echo "generate: $(cat "$tmp/gen.txt")"

# The README snippets, run from the repository root (they read ../shared).
if [ "$SHARED" -ef ../shared ]; then
  "$tmp/build/readme_cpp" > "$tmp/readme_cpp.txt" || fail "the README's C++ snippet"
  grep -q "military uniform" "$tmp/readme_cpp.txt" || fail "the README's C++ snippet printed: $(cat "$tmp/readme_cpp.txt")"
  grep -q "^detected class 0 " "$tmp/readme_cpp.txt" || fail "the README's C++ snippet found no person: $(cat "$tmp/readme_cpp.txt")"
  "$tmp/build/readme_c" > "$tmp/readme_c.txt" || fail "the README's C snippet"
  grep -q "^653 " "$tmp/readme_c.txt" || fail "the README's C snippet printed: $(cat "$tmp/readme_c.txt")"
  pyinit=$(ls "$prefix"/lib/python3*/*-packages/tessera/__init__.py 2>/dev/null | head -1 || true)
  if [ -n "$pyinit" ]; then
    pydir=$(dirname "$(dirname "$pyinit")")
    PYTHONPATH="$pydir" "$PY" -c 'import tessera, sys; assert tessera.__file__.startswith(sys.argv[1]), tessera.__file__' "$pydir" \
      || fail "the installed Python package does not import"
    PYTHONPATH="$pydir" "$PY" "$tmp/snippets/readme.py" > "$tmp/readme_py.txt" || fail "the README's Python snippet"
    grep -q "military uniform" "$tmp/readme_py.txt" || fail "the README's Python snippet printed: $(cat "$tmp/readme_py.txt")"
    grep -q "'class_id': 0," "$tmp/readme_py.txt" || fail "the README's Python snippet found no person: $(cat "$tmp/readme_py.txt")"
    echo "README snippets (C++, C, Python, the last on the installed package): ok"
  else
    echo "README snippets (C++, C): ok; the Python package is not built"
  fi
fi
echo "examples: all ok"
