"""The gradient-rule interface has one implementation per speed: raw arrays and recorded Tensors."""

import inspect

from actorgrad.devices.array_ops import ArrayOps
from actorgrad.tensor_ops import TensorOps

# Kernels of forward ops that need a version per device (CuPy's add.at lacks small dtypes, its accumulate most
# ufuncs): no gradient rule calls them, so Tensors need none.
FORWARD_KERNELS = {"add_at", "accumulate"}


def _interface(cls) -> dict:
    return {
        name: [p for p in inspect.signature(fn).parameters if p != "self"]
        for name, fn in vars(cls).items()
        if not name.startswith("_") and callable(getattr(cls, name)) and name not in FORWARD_KERNELS
    }


def test_both_implementations_offer_the_same_methods_with_the_same_parameters():
    raw, recorded = _interface(ArrayOps), _interface(TensorOps)
    assert raw.keys() == recorded.keys()
    assert {n: len(p) for n, p in raw.items()} == {n: len(p) for n, p in recorded.items()}


def test_every_tensor_method_can_be_called_without_an_instance():
    for name, member in vars(TensorOps).items():
        if inspect.isfunction(member):
            raise AssertionError(f"TensorOps.{name} is a plain function: it needs @staticmethod")
