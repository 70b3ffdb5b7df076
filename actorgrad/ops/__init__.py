"""The differentiable ops, one module per family; each binds its Tensor methods and operators here.

A family module lists its public functions in `__all__` (exported as `actorgrad.<name>`) and its Tensor
methods in `METHODS`.
"""

from actorgrad.ops import (
    arithmetic,
    contraction,
    conv,
    embeddings,
    linalg,
    losses,
    normalization,
    pooling,
    reductions,
    regularization,
    shape,
)
from actorgrad.ops.arithmetic import *  # noqa: F403
from actorgrad.ops.contraction import *  # noqa: F403
from actorgrad.ops.conv import *  # noqa: F403
from actorgrad.ops.embeddings import *  # noqa: F403
from actorgrad.ops.linalg import *  # noqa: F403
from actorgrad.ops.losses import *  # noqa: F403
from actorgrad.ops.normalization import *  # noqa: F403
from actorgrad.ops.pooling import *  # noqa: F403
from actorgrad.ops.reductions import *  # noqa: F403
from actorgrad.ops.regularization import *  # noqa: F403
from actorgrad.ops.shape import *  # noqa: F403
from actorgrad.tensor import Tensor

FAMILIES = (
    arithmetic,
    contraction,
    conv,
    embeddings,
    linalg,
    losses,
    normalization,
    pooling,
    reductions,
    regularization,
    shape,
)
__all__ = sorted(name for family in FAMILIES for name in family.__all__)

for _family in FAMILIES:
    for _name, _method in _family.METHODS.items():
        setattr(Tensor, _name, _method)
