"""Builds saturn._core with the project's own CMake build (docs/python.md).

The C++ libraries come from Debian's packages (tools/setup.sh installs
them). SATURN_BUILD_DIR reuses a configured build folder (the tests do);
otherwise the build goes to build/pip, configured without tests and
benchmarks, for the interpreter pip runs under.
"""

import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        build = os.environ.get("SATURN_BUILD_DIR") or os.path.join(ROOT, "build", "pip")
        if not os.path.exists(os.path.join(build, "CMakeCache.txt")):
            subprocess.check_call(["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                                   "-DSATURN_BUILD_TESTS=OFF", "-DSATURN_BUILD_BENCH=OFF",
                                   "-DPython_EXECUTABLE=" + sys.executable])
        subprocess.check_call(["cmake", "--build", build, "--target", "saturn_python"])
        built = os.path.join(build, "python", "saturn")
        cores = [f for f in os.listdir(built) if f.startswith("_core") and f.endswith(".so")]
        if len(cores) != 1:
            raise RuntimeError("expected one saturn/_core*.so in %s, found %s" % (built, cores))
        target = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(built, cores[0]), target)
        # The shipped rulesets travel with the package (saturn/__init__.py
        # points SATURN_RULESETS at them).
        shutil.copytree(os.path.join(ROOT, "rulesets"), os.path.join(os.path.dirname(target), "rulesets"),
                        dirs_exist_ok=True)


setup(ext_modules=[Extension("saturn._core", sources=[])], cmdclass={"build_ext": CMakeBuild})
