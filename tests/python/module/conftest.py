"""Fixtures of the fp8lab module's pytest suite (docs/python.md): the CLI the module must agree with,
the oracle tables, and a scratch directory. CTest sets PYTHONPATH to the build tree's python/ and
FP8LAB_CLI to fp8lab-cli; run by hand:
    PYTHONPATH=build/python FP8LAB_CLI=build/app/fp8lab-cli python3 -m pytest tests/python/module
"""
import json
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("FP8LAB_CLI", str(ROOT / "build" / "app" / "fp8lab-cli"))
    if not os.path.exists(path):
        pytest.skip("fp8lab-cli not built (set FP8LAB_CLI): the CLI comparisons need it")

    def run(*args, check=True, json_out=False):
        p = subprocess.run([path, *map(str, args)], capture_output=True, text=True)
        if check and p.returncode != 0:
            raise AssertionError("fp8lab-cli %s failed (%d):\n%s%s" % (" ".join(map(str, args)), p.returncode,
                                                                         p.stdout, p.stderr))
        return json.loads(p.stdout) if json_out else p
    return run


@pytest.fixture(scope="session")
def oracle_dir():
    return ROOT / "tests" / "data" / "oracle"
