#!/usr/bin/env bash
# pip_install.sh REPO BUILD_DIR [PYTHON]: the README's pip commands, checked (CTest pip_install,
# label python). Into a scratch venv (--system-site-packages: Debian's numpy, setuptools,
# wheel), `pip install --no-build-isolation .` from the repository root and from python/,
# then `import tessera` there without PYTHONPATH; and a wheel with
# `python3 -m build --no-isolation --wheel`. No index is used (--no-index): nothing is
# downloaded. TESSERA_BUILD_DIR=BUILD_DIR reuses this build's module (target tessera_python),
# so nothing is compiled twice.
set -euo pipefail
repo=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
python=${3:-/usr/bin/python3}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export TESSERA_BUILD_DIR="$build"
unset PYTHONPATH

"$python" -m venv --system-site-packages "$scratch/venv"
venv_py="$scratch/venv/bin/python3"

check_import() {
  (cd "$scratch" && "$venv_py" - "$scratch/venv" <<'PY'
import os, sys
import numpy as np
import tessera, tessera.tflite, tessera.image
venv = sys.argv[1]
assert tessera.__file__.startswith(venv), f"tessera imported from {tessera.__file__}, not the venv {venv}"
assert "PYTHONPATH" not in os.environ
assert tessera.devices()[0].name == "cpu"
print("import tessera", tessera.__version__, "from", os.path.dirname(tessera.__file__))
PY
  )
}

for dir in "$repo" "$repo/python"; do
  echo "== pip install --no-build-isolation . (in $dir)"
  (cd "$dir" && "$venv_py" -m pip install --no-build-isolation --no-index --no-deps -q .)
  check_import
  "$venv_py" -m pip uninstall -y -q tessera
done

echo "== python3 -m build --no-isolation --wheel"
(cd "$repo" && "$venv_py" -m build --no-isolation --wheel --outdir "$scratch/dist" >"$scratch/build.log" 2>&1) ||
  { cat "$scratch/build.log"; exit 1; }
wheel=$(ls "$scratch"/dist/tessera-*.whl)
"$venv_py" - "$wheel" <<'PY'
import sys, zipfile
names = zipfile.ZipFile(sys.argv[1]).namelist()
for want in ("tessera/__init__.py", "tessera/tflite.py", "tessera/image.py"):
    assert want in names, (want, names)
assert any(n.startswith("tessera/_tessera") and n.endswith(".so") for n in names), names
print("wheel", sys.argv[1].rsplit("/", 1)[1], "holds", len(names), "files")
PY
"$venv_py" -m pip install --no-index --no-deps -q "$wheel"
check_import
echo "pip_install: ok"
