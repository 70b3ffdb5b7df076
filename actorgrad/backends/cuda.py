"""`torch.backends.cuda`: `matmul.allow_tf32` is PyTorch's float32 matmul precision seen as a flag (True: 'high'
or 'medium'); the reduced-precision-reduction flags are kept only (actorgrad's float16 products accumulate as
CuPy's cuBLAS calls do)."""

from __future__ import annotations

from typing import Any

from actorgrad import settings


class _Matmul:
    """`torch.backends.cuda.matmul`: unknown attributes are refused, as PyTorch's."""

    _FLAGS = ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")

    def __init__(self) -> None:
        object.__setattr__(self, "_flags", dict.fromkeys(self._FLAGS, True))

    @property
    def allow_tf32(self) -> bool:
        return settings.get_float32_matmul_precision() != "highest"

    def __getattr__(self, name: str) -> Any:
        flags = object.__getattribute__(self, "_flags")
        if name in flags:
            return flags[name]
        raise AttributeError(f"Unknown attribute {name}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "allow_tf32":
            settings.set_float32_matmul_precision("high" if value else "highest")
        elif name in self._flags:
            self._flags[name] = bool(value)
        else:
            raise AttributeError(f"Unknown attribute {name}")


matmul = _Matmul()


def is_built() -> bool:
    """Whether CUDA can be used (CuPy and a device), as actorgrad has no separate CUDA build."""
    from actorgrad import cuda

    return cuda.is_available()
