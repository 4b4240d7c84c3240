"""`pip install .` from the repository gives a package that imports and
finds its rulesets without the source tree's help (SATURN_BUILD_DIR points
setup.py at the suite's own build, so nothing is compiled again)."""

import os
import subprocess
import sys

import pytest


def test_pip_install_from_the_repository(root, tmp_path):
    build = os.environ.get("SATURN_BUILD_DIR")
    if not build:
        pytest.skip("SATURN_BUILD_DIR is not set (ctest sets it)")
    target = tmp_path / "site"
    env = dict(os.environ, SATURN_BUILD_DIR=build)
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                        "--target", str(target), root], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (target / "saturn" / "rulesets" / "algebra.rules").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SATURN_RULESETS")}
    env["PYTHONPATH"] = str(target)
    code = ("import saturn, os; g, r = saturn.optimize(%r, calibration=False); "
            "print(os.environ['SATURN_RULESETS']); print(r['nodes_after'] < r['nodes_before'])"
            % os.path.join(root, "docs", "examples", "models", "mlp.onnx"))
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split()
    assert lines[0] == str(target / "saturn" / "rulesets") and lines[1] == "True"
