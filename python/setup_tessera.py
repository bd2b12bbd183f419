"""The setuptools build of the Python package `tessera`, shared by the repository root's
setup.py and python/setup.py (`pip install --no-build-isolation .` from either folder,
`python3 -m build --no-isolation`).

The native module tessera._tessera is built by the project's own CMake (target
tessera_python, -j2), never by setuptools' compiler, and nothing is downloaded: CMake finds
Debian's pybind11-dev, python3-dev and the libraries scripts/setup.sh installs.

Environment:
  TESSERA_BUILD_DIR  the CMake build folder. One already configured (./build, made by
                     scripts/setup.sh) is reused as it is: only tessera_python is brought up to
                     date in it. Default: build-pip/ in the repository, configured on first
                     use for the running Python with tests, benchmarks and the server off.
  TESSERA_BUILD_JOBS parallel compile jobs (default 2).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext



def project_version(root: Path) -> str:
    m = re.search(r"project\(Tessera\s+VERSION\s+([0-9.]+)", (root / "CMakeLists.txt").read_text())
    return m.group(1) if m else "0.0.0"


class CMakeBuildExt(build_ext):
    """Builds tessera._tessera with CMake and copies it where setuptools packs it."""

    root: Path = Path(".")

    def run(self):
        for ext in self.extensions:
            self.build_extension(ext)

    def build_extension(self, ext):
        root = self.root
        build_dir = Path(os.environ.get("TESSERA_BUILD_DIR") or root / "build-pip")
        if not build_dir.is_absolute():
            build_dir = (root / build_dir).resolve()
        jobs = os.environ.get("TESSERA_BUILD_JOBS", "2")
        cmake = shutil.which("cmake")
        if not cmake:
            sys.exit("tessera: cmake is not installed (Debian: apt-get install cmake; see scripts/setup.sh)")
        if not (build_dir / "CMakeCache.txt").exists():
            configure = [cmake, "-S", str(root), "-B", str(build_dir), "-DCMAKE_BUILD_TYPE=Release",
                         "-DTESSERA_BUILD_PYTHON=ON", f"-DTESSERA_PYTHON={sys.executable}",
                         "-DTESSERA_BUILD_TESTS=OFF", "-DTESSERA_BUILD_BENCH=OFF", "-DTESSERA_BUILD_SERVE=OFF",
                         "-DTESSERA_INSTALL=OFF"]
            self.announce("tessera: " + " ".join(configure), level=2)
            subprocess.check_call(configure)
        subprocess.check_call([cmake, "--build", str(build_dir), "--target", "tessera_python", "-j", jobs])

        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        built = build_dir / "python" / "tessera" / ("_tessera" + suffix)
        if not built.exists():
            found = sorted(p.name for p in (build_dir / "python" / "tessera").glob("_tessera*"))
            sys.exit(f"tessera: {built} was not built; {build_dir} has {found or 'no module'} (configured for "
                     f"another Python? TESSERA_BUILD_DIR names a folder configured for {sys.executable})")
        dest = Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, dest)


def main(root: Path, package_dir: str) -> None:
    """setup() for the repository at `root`; `package_dir` is python/ relative to setup.py."""
    CMakeBuildExt.root = root.resolve()
    readme = root / "README.md"
    setup(
        name="tessera",
        version=project_version(root),
        description="Tessera: an inference runtime for NPUs (TFLite and GGUF models on cpu, tile and rknpu devices)",
        long_description=readme.read_text(encoding="utf-8") if readme.exists() else "",
        long_description_content_type="text/markdown",
        python_requires=">=3.9",
        install_requires=["numpy"],
        packages=["tessera"],
        package_dir={"": package_dir},
        ext_modules=[Extension("tessera._tessera", sources=[])],
        cmdclass={"build_ext": CMakeBuildExt},
        # setuptools' own build folder beside CMake's (./build is CMake's).
        options={"build": {"build_base": os.path.relpath(root / "build-pip" / "setuptools")}},
        zip_safe=False,
    )
