"""The gpu tests (every test marked `gpu`: tests/test_cuda*.py, and gpu cases beside some ops' cpu tests) against a
stand-in for CuPy (numpy underneath, CuPy 14.2's API on top, `tests/cupy_standin`), so that CI, which has no GPU,
still catches code on the CUDA path that only numpy would take."""

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent
STANDIN = TESTS / "cupy_standin"


def test_the_gpu_tests_pass_against_the_cupy_standin():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(STANDIN), os.environ.get("PYTHONPATH")])))
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "gpu", str(TESTS)],
        cwd=TESTS.parent, env=env, capture_output=True, text=True, timeout=300,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr[-2000:]
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "skipped" not in summary and " passed" in summary, summary
