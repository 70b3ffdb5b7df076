"""actorgrad backward benchmarks against a plain-numpy floor, torch and HIPS autograd.

Run `python -m benchmarks.bench` or `python benchmarks/bench.py` [--repeat N | --quick] [--only W1,W3]
[--json PATH]: the suite lives in `actorgrad.bench` (also `actorgrad bench`); this wrapper keeps its plain
output and leaves the scaling runs off unless asked (`--scaling`, `--plot PATH`).
"""

import sys

from actorgrad.bench.environment import exec_with_blas_env
from actorgrad.bench.main import main

if __name__ == "__main__":
    exec_with_blas_env(sys.argv)  # BLAS threads must sleep when idle: see actorgrad/bench/environment.py
    sys.exit(main([*sys.argv[1:], "--plain"]))
