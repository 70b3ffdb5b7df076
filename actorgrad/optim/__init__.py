"""Optimizers in PyTorch's shape (SGD, the Adam family, RMSprop, Adagrad, Adadelta) over parameter groups, and
`lr_scheduler`."""

from actorgrad.optim import lr_scheduler
from actorgrad.optim.adadelta import Adadelta
from actorgrad.optim.adagrad import Adagrad
from actorgrad.optim.adam import Adam, AdamW
from actorgrad.optim.adamax import Adamax
from actorgrad.optim.nadam import NAdam
from actorgrad.optim.optimizer import Optimizer
from actorgrad.optim.radam import RAdam
from actorgrad.optim.rmsprop import RMSprop
from actorgrad.optim.sgd import SGD

__all__ = [
    "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam", "Optimizer", "RAdam", "RMSprop", "lr_scheduler",
]
