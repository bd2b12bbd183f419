#!/usr/bin/env bash
# The Debian package of a native build (cmake/package.cmake): makes it with `cpack -G DEB`
# in BUILD_DIR, checks its control fields (name, version, architecture, declared
# dependencies, each satisfied on this machine) and its files, unpacks it into a scratch
# root with dpkg-deb -x (this machine's package database is left alone), runs the packaged
# `tessera demo`, and builds and runs examples/ and the README's snippets against the
# package's files (scripts/examples.sh with TESSERA_EXAMPLES_PREFIX=ROOT/usr), the packaged
# CLI as the reference.
#   deb_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
SRC="$(cd "$1" && pwd)"
B="$(cd "$2" && pwd)"
fail() { echo "package: FAILED: $*" >&2; exit 1; }
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (cmake, dpkg-dev)"
done
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$B/CPackConfig.cmake")
arch=$(dpkg --print-architecture)
deb="$B/packages/tessera_${version}_${arch}.deb"
rm -f "$deb"
(cd "$B" && cpack -G DEB) > "$tmp/cpack.log" 2>&1 || { cat "$tmp/cpack.log"; fail "cpack -G DEB"; }
[ -f "$deb" ] || { cat "$tmp/cpack.log"; fail "cpack did not write $deb"; }
echo "package: $deb ($(du -k "$deb" | cut -f1) KiB)"

# Control fields.
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = tessera ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version: $(field Version)"
[ "$(field Architecture)" = "$arch" ] || fail "Architecture: $(field Architecture)"
[ -n "$(field Maintainer)" ] && [ -n "$(field Description)" ] || fail "no Maintainer or Description"
depends=$(field Depends)
echo "package: Depends: $depends"
# What the programs and libtessera.so link (dpkg-shlibdeps), Python.
for d in libc6 libstdc++6 libfmt9 libflatbuffers2; do
  echo ", $depends," | grep -q ", $d[ ,(]" || fail "Depends lacks $d: $depends"
done
if readelf -d "$B/tessera" | grep -q 'libcpp-httplib'; then
  echo ", $depends," | grep -q ", libcpp-httplib[^ ,]*[ ,(]" || fail "Depends lacks cpp-httplib: $depends"
fi
# Every dependency is satisfied here (the package installs on this machine as it is).
/usr/bin/python3 - "$depends" <<'PYEOF' || fail "a declared dependency is not satisfied on this machine"
import re, subprocess, sys
ok = True
for dep in sys.argv[1].split(","):
    alts = [a.strip() for a in dep.split("|")]
    def satisfied(a):
        m = re.fullmatch(r"([a-z0-9.+-]+)(?::\w+)?(?:\s*\((<<|<=|=|>=|>>)\s*([^)]+)\))?", a)
        if not m:
            sys.exit(f"unparsable dependency {a!r}")
        name, op, ver = m.groups()
        q = subprocess.run(["dpkg-query", "-W", "-f=${Status}\t${Version}\n", name], capture_output=True, text=True)
        for line in q.stdout.splitlines():
            status, have = line.split("\t")
            if status.endswith(" installed") and (not op or subprocess.run(["dpkg", "--compare-versions", have, {"<=": "le", ">=": "ge", "<<": "lt", ">>": "gt", "=": "eq"}[op], ver]).returncode == 0):
                return True
        return False
    if not any(satisfied(a) for a in alts):
        print(f"package: not satisfied here: {dep.strip()}")
        ok = False
sys.exit(0 if ok else 1)
PYEOF

# Files.
# (A link is listed as "NAME -> TARGET".)
dpkg-deb -c "$deb" | awk '{ if ($(NF-1) == "->") print $(NF-2); else print $NF }' | sed 's|^\./|/|' > "$tmp/files.txt"
need=(/usr/bin/tessera /usr/include/tessera/tessera.h /usr/include/tessera/tessera_c.h /usr/include/tessera/version.h
      /usr/lib/libtessera.so /usr/lib/libtessera.so.0.1 /usr/lib/libtessera.so.0.1.0 /usr/lib/cmake/Tessera/TesseraConfig.cmake
      /usr/lib/cmake/Tessera/TesseraTargets.cmake /usr/lib/pkgconfig/tessera.pc)
if [ -d "$B/python/tessera" ]; then
  need+=(/usr/lib/python3/dist-packages/tessera/__init__.py)
  grep -q '^/usr/lib/python3/dist-packages/tessera/_tessera.*\.so$' "$tmp/files.txt" || fail "no Python module in the package"
fi
for f in "${need[@]}"; do grep -qx "$f" "$tmp/files.txt" || fail "$f is not in the package"; done
echo "package: $(grep -vc '/$' "$tmp/files.txt") files, among them ${need[*]}"

# Unpacked into a scratch root: the demo, then the examples against the package's files.
root="$tmp/root"
dpkg-deb -x "$deb" "$root"
"$root/usr/bin/tessera" demo > "$tmp/demo.txt" 2>&1 || { cat "$tmp/demo.txt"; fail "the packaged tessera demo"; }
grep -q "All devices agree with the cpu" "$tmp/demo.txt" || { cat "$tmp/demo.txt"; fail "the packaged tessera demo disagrees"; }
echo "package: the packaged tessera demo: $(grep "All devices agree" "$tmp/demo.txt")"
TESSERA_EXAMPLES_PREFIX="$root/usr" "$SRC/scripts/examples.sh" || fail "the examples against the package"
echo "package: PASS"
