"""The differentiable ops, one module per family; each binds its Tensor methods and operators here.

A family module lists its public functions in `__all__` (exported as `actorgrad.<name>`) and its Tensor
methods in `METHODS`.
"""

from actorgrad.ops import (
    activations,
    arithmetic,
    casts,
    comparison,
    contraction,
    conv,
    embeddings,
    extrema,
    indexing,
    inplace,
    joining,
    linalg,
    losses,
    normalization,
    operands,
    pooling,
    reductions,
    regularization,
    selection,
    shape,
    special,
    statistics,
    unary,
)
from actorgrad.ops.activations import *  # noqa: F403
from actorgrad.ops.arithmetic import *  # noqa: F403
from actorgrad.ops.comparison import *  # noqa: F403
from actorgrad.ops.contraction import *  # noqa: F403
from actorgrad.ops.conv import *  # noqa: F403
from actorgrad.ops.embeddings import *  # noqa: F403
from actorgrad.ops.extrema import *  # noqa: F403
from actorgrad.ops.indexing import *  # noqa: F403
from actorgrad.ops.joining import *  # noqa: F403
from actorgrad.ops.linalg import *  # noqa: F403
from actorgrad.ops.losses import *  # noqa: F403
from actorgrad.ops.normalization import *  # noqa: F403
from actorgrad.ops.operands import *  # noqa: F403
from actorgrad.ops.pooling import *  # noqa: F403
from actorgrad.ops.reductions import *  # noqa: F403
from actorgrad.ops.regularization import *  # noqa: F403
from actorgrad.ops.selection import *  # noqa: F403
from actorgrad.ops.shape import *  # noqa: F403
from actorgrad.ops.special import *  # noqa: F403
from actorgrad.ops.statistics import *  # noqa: F403
from actorgrad.ops.unary import *  # noqa: F403
from actorgrad.tensor import Tensor

FAMILIES = (
    activations,
    arithmetic,
    casts,
    comparison,
    contraction,
    conv,
    embeddings,
    extrema,
    indexing,
    inplace,
    joining,
    linalg,
    losses,
    normalization,
    operands,
    pooling,
    reductions,
    regularization,
    selection,
    shape,
    special,
    statistics,
    unary,
)
__all__ = sorted(name for family in FAMILIES for name in family.__all__)

for _family in FAMILIES:
    for _name, _method in _family.METHODS.items():
        setattr(Tensor, _name, _method)
