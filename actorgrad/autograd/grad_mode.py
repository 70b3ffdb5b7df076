"""`actorgrad.autograd.grad_mode`, as torch.autograd.grad_mode: the context managers that switch graph recording,
gathered where PyTorch users import them from (they live in `actorgrad.grad_mode` and
`actorgrad.autograd.multithreading`)."""

from actorgrad.autograd.multithreading import set_multithreading_enabled
from actorgrad.grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled

__all__ = ["enable_grad", "inference_mode", "no_grad", "set_grad_enabled", "set_multithreading_enabled"]
