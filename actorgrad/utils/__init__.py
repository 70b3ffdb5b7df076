"""`actorgrad.utils`: training utilities built on the autograd surface (PyTorch's torch.utils)."""

from actorgrad.utils.checkpoint import checkpoint

__all__ = ["checkpoint"]
