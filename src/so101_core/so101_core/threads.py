"""Thread-pool sizes of child processes: the BLAS / OpenMP pools (numpy's OpenBLAS, MKL, torch's OpenMP) are
sized from these variables when the libraries load, so they must be in a process's environment when it starts."""

from __future__ import annotations

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "LP_NUM_THREADS")


def thread_env(threads: int) -> dict[str, str]:
    """Environment giving each pool ``threads`` threads (none when 0: the libraries' defaults, one per core)."""
    return {name: str(threads) for name in THREAD_VARIABLES} if threads else {}
