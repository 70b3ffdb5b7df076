"""BLAS and OpenMP settings the benchmark needs before numpy (and torch) load.

Idle BLAS threads must sleep, not spin, or they take a core from whatever runs next. torch's OpenMP threads spin
for a while after each parallel op (HIPS W2 went from 148 to 210 ms when it followed torch); OpenBLAS's spin for
2**28 cycles (0.1 s) after each multithreaded call, so a backward held at one BLAS thread right after a forward at
two lost a core (numpy floor 2 threads: 145 ms instead of 98 ms). Both read these before they load.

Importing actorgrad imports numpy, so neither the `actorgrad` console script nor `benchmarks/bench.py` can set them
in time: both re-execute themselves with them set (`exec_with_blas_env`, about 0.3 s) unless they are already in
the environment (a value the user set wins).
"""

from __future__ import annotations

import os
import sys

BLAS_ENV = {"OMP_WAIT_POLICY": "PASSIVE", "OPENBLAS_THREAD_TIMEOUT": "4"}


def exec_with_blas_env(python_args: list[str]) -> None:
    """Re-run `python *python_args` with the settings when this process started without them."""
    if all(key in os.environ for key in BLAS_ENV):
        return
    for key, value in BLAS_ENV.items():
        os.environ.setdefault(key, value)
    sys.stdout.flush()
    os.execv(sys.executable, [sys.executable, *python_args])
