"""`actorgrad.utils.hooks`, as torch.utils.hooks: RemovableHandle, what every `register_*_hook` returns (the
class lives with the backward hooks in `actorgrad.hooks`)."""

from actorgrad.hooks import RemovableHandle

__all__ = ["RemovableHandle"]
