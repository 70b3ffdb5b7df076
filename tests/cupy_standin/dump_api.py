"""Write CuPy's public API (functions and their parameters, ufuncs and their methods, ndarray's methods) as the
JSON the stand-in checks calls against. Run where the real CuPy is installed (no GPU needed):
`python tests/cupy_standin/dump_api.py > tests/cupy_standin/cupy/api.json`. api.json came from cupy-cuda13x 14.2.0,
but for its "fft" section, written by hand from CuPy's documented cupy.fft signatures (no CuPy to dump it from).
"""

import inspect
import json
import sys

import cupy


def parameters(fn):
    try:
        return [(p.name, p.kind.name, p.default is inspect.Parameter.empty)
                for p in inspect.signature(fn).parameters.values()]
    except (TypeError, ValueError):
        return None


def main() -> None:
    api = {"funcs": {}, "ufuncs": {}, "methods": {}, "linalg": {}, "fft": {}}
    for name in dir(cupy):
        value = getattr(cupy, name)
        if name.startswith("_"):
            continue
        if isinstance(value, cupy.ufunc):
            api["ufuncs"][name] = [m for m in ("reduce", "accumulate", "reduceat", "outer", "at") if hasattr(value, m)]
        elif callable(value) and not isinstance(value, type):
            api["funcs"][name] = parameters(value)
    for submodule in ("linalg", "fft"):
        for name in dir(getattr(cupy, submodule)):
            if not name.startswith("_"):
                api[submodule][name] = parameters(getattr(getattr(cupy, submodule), name))
    for name in dir(cupy.ndarray):
        if name.startswith("__") and name not in ("__getitem__", "__setitem__", "__array__"):
            continue
        method = getattr(cupy.ndarray, name)
        api["methods"][name] = parameters(method) or (method.__doc__ or "").split("\n")[0]
    json.dump(api, sys.stdout, separators=(",", ":"), sort_keys=True)


if __name__ == "__main__":
    main()
