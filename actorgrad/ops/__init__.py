"""The differentiable ops, one module per family; each binds its Tensor methods and operators here.

A family module lists its public functions in `__all__` (exported as `actorgrad.<name>`, with PyTorch's check
that a Tensor argument is one) and its Tensor methods in `METHODS`; a new family is one more name in
`FAMILY_NAMES`.
"""

from importlib import import_module

from actorgrad.ops.index_out import INDEX_OUT
from actorgrad.ops.linalg_out import PRODUCTS
from actorgrad.ops.out_arguments import OUT_DTYPE_RULES, SEVERAL_OUTPUTS, give_out_by_rules
from actorgrad.ops.public_names import check_tensor_arguments, give_out
from actorgrad.ops.reduction_out import give_reduction_out
from actorgrad.ops.selection import where_out
from actorgrad.tensor import Tensor

FAMILY_NAMES = (
    "activations",
    "piecewise_linear_activations",
    "adaptive_pooling",
    "aliases",
    "aten_forms",
    "arithmetic",
    "arithmetic_unary",
    "bilinear",
    "casts",
    "channel_shuffle",
    "comparison",
    "complex_parts",
    "contraction",
    "einsum_contraction",
    "correlation",
    "conv",
    "diagonals",
    "distances",
    "embeddings",
    "extrema",
    "flat_indices",
    "float_binary",
    "gamma",
    "grad_dtype",
    "histograms",
    "index_reduce",
    "indexing",
    "inplace",
    "inplace_forms",
    "joining",
    "linalg",
    "linalg_decompositions",
    "linalg_spectral",
    "linalg_lu",
    "linalg_triangular",
    "legacy_linalg",
    "lowrank",
    "index_sets",
    "integer_ops",
    "matrix_products",
    "matrix_functions",
    "method_forms",
    "log_scans",
    "losses",
    "nan_reductions",
    "native_forms",
    "normalization",
    "numerical",
    "operands",
    "operators",
    "pointwise",
    "placements",
    "pooling",
    "properties",
    "quantiles",
    "random_fills",
    "reductions",
    "regularization",
    "rounding",
    "scans",
    "scatter",
    "scatter_reduce",
    "searching",
    "segment_reduce",
    "sections",
    "selection",
    "shape",
    "sorting",
    "stacking",
    "stft",
    "storage_methods",
    "storage_set",
    "special",
    "special_functions",
    "statistics",
    "strided",
    "strided_scatter",
    "stream_use",
    "tensor_kinds",
    "unary",
    "view_in_place",
)
FAMILIES = tuple(import_module(f"actorgrad.ops.{name}") for name in FAMILY_NAMES)
__all__ = sorted(name for family in FAMILIES for name in family.__all__)

for _family in FAMILIES:
    globals().update({name: getattr(_family, name) for name in _family.__all__})
    for _name, _method in _family.METHODS.items():
        setattr(Tensor, _name, _method)
check_tensor_arguments(globals(), __all__)
give_out_by_rules(globals(), OUT_DTYPE_RULES)  # after the check: `out=` wraps the checked names
give_out_by_rules(globals(), PRODUCTS)  # the matrix products' `out=`
give_out_by_rules(globals(), SEVERAL_OUTPUTS)  # `out=(values, indices)` of max, sort ...
give_out_by_rules(globals(), INDEX_OUT)  # gather, scatter, searchsorted ...
give_reduction_out(globals())  # sum, cumsum, amax, cat, stack ...
give_out(globals(), ("where",), where_out)  # where's out form takes tensors only
