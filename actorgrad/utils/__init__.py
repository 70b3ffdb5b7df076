"""`actorgrad.utils`: training utilities built on the autograd surface (PyTorch's torch.utils)."""

from actorgrad.utils import checkpoint

__all__ = ["checkpoint"]
