"""`actorgrad.utils`: training utilities built on the autograd surface (PyTorch's torch.utils)."""

from actorgrad.utils import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
