# pytest for the Python package (ctest runs it: tests/CMakeLists.txt puts
# <build>/python on PYTHONPATH and sets SATURN_BUILD_DIR).
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "docs", "examples", "models")


@pytest.fixture
def models():
    return MODELS


@pytest.fixture
def root():
    return ROOT
