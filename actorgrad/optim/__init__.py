"""Optimizers in PyTorch's shape (SGD, the Adam family, RMSprop, Adagrad, Adadelta, Rprop, ASGD, Adafactor,
LBFGS, Muon) over parameter groups, `lr_scheduler`, and `swa_utils` (weight averaging)."""

from actorgrad.optim import lr_scheduler, swa_utils
from actorgrad.optim.adadelta import Adadelta
from actorgrad.optim.adafactor import Adafactor
from actorgrad.optim.adagrad import Adagrad
from actorgrad.optim.adam import Adam, AdamW
from actorgrad.optim.adamax import Adamax
from actorgrad.optim.asgd import ASGD
from actorgrad.optim.lbfgs import LBFGS
from actorgrad.optim.muon import Muon
from actorgrad.optim.nadam import NAdam
from actorgrad.optim.optimizer import Optimizer
from actorgrad.optim.radam import RAdam
from actorgrad.optim.rmsprop import RMSprop
from actorgrad.optim.rprop import Rprop
from actorgrad.optim.sgd import SGD

__all__ = [
    "ASGD", "LBFGS", "SGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "Muon", "NAdam", "Optimizer",
    "RAdam", "RMSprop", "Rprop", "lr_scheduler", "swa_utils",
]
