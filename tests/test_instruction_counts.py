"""benchmarks/instructions.py: its workloads run (without valgrind here), so the counting tool does not rot."""

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "benchmarks" / "instructions.py"


@pytest.mark.skipif(not SCRIPT.exists(), reason="benchmarks/ is not part of this checkout")
def test_every_instruction_count_workload_runs_its_region():
    code = (
        "import runpy, sys; tool = runpy.run_path(sys.argv[1]);"
        "[tool['run_inner'](name) for name in tool['WORKLOADS']]"
    )
    result = subprocess.run([sys.executable, "-c", code, str(SCRIPT)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(not SCRIPT.exists(), reason="benchmarks/ is not part of this checkout")
def test_an_unknown_workload_is_refused_by_name():
    result = subprocess.run([sys.executable, str(SCRIPT), "--only", "op,nodes"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "unknown workload nodes" in result.stderr
