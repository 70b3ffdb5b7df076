"""`actorgrad.testing`, as torch.testing: `assert_close` compares tensors (and numbers, and containers of them)
with PyTorch's per-dtype tolerances and failure messages; `make_tensor` builds random test inputs with
PyTorch's default value ranges."""

from actorgrad.testing.comparison import assert_close
from actorgrad.testing.creation import make_tensor

__all__ = ["assert_close", "make_tensor"]
