"""Builds spmd_torch and spmdrun with spmd's CMake build, for `pip install ./python`.

The extension is built against the torch of the Python running pip (-DSPMD_PYTHON), so a venv
of Debian 12 gets a module for torch 1.13 and one of Debian 13 a module for torch 2.6. spmdrun
goes into the environment's bin/ beside its python3, which spmdrun then runs `.py` scripts with.
The CMake build folder (SPMD_PIP_BUILD_DIR, default <spmd>/build-pip-<python tag>) is kept, so
reinstalling rebuilds only what changed. Needs CMake, a C++20 compiler, pybind11, LibTorch and
Python's headers (Debian: cmake g++ pybind11-dev libtorch-dev python3-dev; scripts/install-deps.sh).
"""
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TAG = sysconfig.get_config_var("SOABI") or f"py{sys.version_info[0]}{sys.version_info[1]}"
BUILD = Path(os.environ.get("SPMD_PIP_BUILD_DIR", ROOT / f"build-pip-{TAG}")).resolve()


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    match = re.search(r"project\(spmd VERSION ([0-9.]+)", text)
    if not match:
        raise RuntimeError("setup.py: no project(spmd VERSION ...) in CMakeLists.txt")
    return match.group(1)


def run(cmd):
    print("spmd setup.py:", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True)


class CMakeBuild(build_ext):
    """Configures (once) and builds the targets spmd_torch_python and spmdrun."""

    def build_extension(self, ext):
        if not shutil.which("cmake"):
            raise RuntimeError("spmd_torch needs CMake to build (Debian: apt-get install cmake ninja-build g++)")
        if not (BUILD / "CMakeCache.txt").exists():
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            run(["cmake", "-S", ROOT, "-B", BUILD, *generator, "-DCMAKE_BUILD_TYPE=Release",
                 f"-DSPMD_PYTHON={sys.executable}", "-DSPMD_WITH_TORCH=ON", "-DSPMD_BUILD_TESTS=OFF",
                 "-DSPMD_BUILD_BENCH=OFF", "-DSPMD_BUILD_EXAMPLES=OFF"])
        jobs = os.environ.get("SPMD_PIP_JOBS", str(os.cpu_count() or 1))
        run(["cmake", "--build", BUILD, "--target", "spmd_torch_python", "spmdrun", "-j", jobs])
        package = BUILD / "python" / "spmd_torch"
        built = sorted(package.glob("_C*.so"))
        if not built:
            raise RuntimeError(f"spmd setup.py: the build made no extension in {package}")
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)
        shutil.copyfile(package / "_build_info.py", target.parent / "_build_info.py")


setup(
    version=project_version(),
    # setuptools' own scratch files go to the build folder too, not into the source tree.
    options={"build": {"build_base": str(BUILD / "setuptools")}, "egg_info": {"egg_base": str(BUILD)}},
    packages=["spmd_torch"],
    ext_modules=[Extension("spmd_torch._C", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    # The launcher, into the environment's bin/ (beside the python3 it runs scripts with).
    # (A path relative to this folder: older setuptools refuse absolute ones.)
    data_files=[("bin", [os.path.relpath(BUILD / "bin" / "spmdrun", HERE)])],
    zip_safe=False,
)
