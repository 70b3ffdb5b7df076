"""Optimizers in PyTorch's shape: SGD, Adam and AdamW over parameter groups, and `lr_scheduler`."""

from actorgrad.optim import lr_scheduler
from actorgrad.optim.adam import Adam, AdamW
from actorgrad.optim.optimizer import Optimizer
from actorgrad.optim.sgd import SGD

__all__ = ["SGD", "Adam", "AdamW", "Optimizer", "lr_scheduler"]
