"""Builds the fp8kv Python package from the repository it sits in.

`pip install ./python` (from the repository root, after scripts/bootstrap) configures the C
project with CMake (no MPFR oracle, no tests), builds libfp8kv_py — the judge library behind
`fp8kv judge-kv` with a flat C interface — and puts it and the golden vectors inside the
package, so an installed fp8kv needs nothing from the checkout. The package is only built
from a checkout: it is a view of the C judge, not a second implementation.
"""
import hashlib
import os
import pathlib
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


class BinaryDistribution(Distribution):
    """The wheel holds a shared library: it is platform-specific."""

    def has_ext_modules(self):
        return True


class BuildWithNative(build_py):
    """build_py, then libfp8kv_py.so and the vectors copied into the built package."""

    def run(self):
        super().run()
        if not (ROOT / "CMakeLists.txt").is_file() or not (ROOT / "vectors").is_dir():
            raise SystemExit(f"fp8kv: build the package from a checkout ({ROOT} is not one)")
        # one build directory per checkout location (a moved or copied checkout gets its own)
        tag = hashlib.sha256(str(ROOT).encode()).hexdigest()[:12]
        build = HERE / "build" / f"native-{tag}"
        configure = ["cmake", "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                     "-DFP8KV_WITH_ORACLE=OFF", "-DFP8KV_TESTS=OFF", "-DFP8KV_INSTALL=OFF"]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        subprocess.check_call(configure)
        jobs = str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", str(build), "--target", "fp8kv_py", "-j", jobs])
        # an editable install (pip install -e) imports the package from the source tree
        editable = getattr(self, "editable_mode", False)
        package = (HERE if editable else pathlib.Path(self.build_lib)) / "fp8kv"
        (package / "_lib").mkdir(parents=True, exist_ok=True)
        shutil.copy2(build / "conformance" / "libfp8kv_py.so", package / "_lib" / "libfp8kv_py.so")
        shutil.rmtree(package / "vectors", ignore_errors=True)
        shutil.copytree(ROOT / "vectors", package / "vectors")


setup(cmdclass={"build_py": BuildWithNative}, distclass=BinaryDistribution)
