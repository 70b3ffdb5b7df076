"""scaled_dot_product_attention and multi_head_attention_forward, `nn.functional`'s attention, composed of
differentiable ops (matmul, softmax, where, dropout), so their gradients are those ops' gradients.

PyTorch's two mask conventions meet here: scaled_dot_product_attention's bool mask says which keys take part
(True = attend), while MultiheadAttention's bool masks say which are left out (True = masked); float masks are
added to the scores in both.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from actorgrad.amp.autocast import autocast_call, autocast_state
from actorgrad.creation import ones, zeros
from actorgrad.ops.contraction import baddbmm
from actorgrad.ops.dim_activations import softmax
from actorgrad.ops.flag_arguments import not_bool
from actorgrad.ops.joining import cat
from actorgrad.ops.linalg import TYPE_META_NAMES, linear, matmul
from actorgrad.ops.loss_arguments import broadcast_into
from actorgrad.ops.operands import SCALAR_NAMES
from actorgrad.ops.regularization import dropout
from actorgrad.ops.selection import where
from actorgrad.ops.shape import pad
from actorgrad.tensor import Tensor

__all__ = ["multi_head_attention_forward", "scaled_dot_product_attention"]


def _type_name(t: Tensor) -> str:
    return TYPE_META_NAMES.get(t._data.dtype, str(t._data.dtype))


def _check_sdpa_inputs(query: Tensor, key: Tensor, value: Tensor, attn_mask: Tensor | None) -> None:
    """PyTorch's checks, with its texts, before any arithmetic."""
    q, k, v = query._data, key._data, value._data
    if not q.dtype == k.dtype == v.dtype:
        raise RuntimeError(
            "Expected query, key, and value to have the same dtype, but got query.dtype: "
            f"{_type_name(query)} key.dtype: {_type_name(key)} and value.dtype: {_type_name(value)} instead."
        )
    if min(q.ndim, k.ndim, v.ndim) < 2:
        raise RuntimeError(
            "Expected query, key, and value to all be  at least 2 dimensional, but got query.dim: "
            f"{q.ndim} key.dim: {k.ndim} and value.dim: {v.ndim} instead."
        )
    if attn_mask is not None and attn_mask._data.dtype not in (np.bool_, np.float32, q.dtype):
        raise RuntimeError(
            "Expected attn_mask dtype to be bool or float or to match query dtype, but got attn_mask.dtype: "
            f"{_type_name(attn_mask)} and  query.dtype: {_type_name(query)} instead."
        )
    if q.dtype.kind != "f":
        raise RuntimeError(f"expected scalar type Float but found {SCALAR_NAMES.get(q.dtype, q.dtype)}")
    # PyTorch multiplies q by k's transpose, then the weights by v, as batched matrices: its size errors name
    # the second factor's flattened batch and the size it should have had.
    for (a, a_dim), (b, b_dim) in (((q, -1), (k, -1)), ((k, -2), (v, -2))):
        if a.shape[a_dim] != b.shape[b_dim]:
            batch = math.prod(np.broadcast_shapes(q.shape[:-2], b.shape[:-2]))
            raise RuntimeError(
                f"Expected size for first two dimensions of batch2 tensor to be: [{batch}, {a.shape[a_dim]}] "
                f"but got: [{batch}, {b.shape[b_dim]}]."
            )


def _repeat_heads(query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
    """Grouped-query attention: each of key's and value's heads serves a group of query heads (dim -3)."""
    heads, key_heads, value_heads = query.shape[-3], key.shape[-3], value.shape[-3]
    if heads % key_heads or heads % value_heads:
        raise RuntimeError("Number of heads in key and value must divide the number of heads in ")  # sic, PyTorch's
    return key.repeat_interleave(heads // key_heads, -3), value.repeat_interleave(heads // value_heads, -3)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> Tensor:
    """softmax(query @ key^T * scale + mask) @ value over the last two dims, batch dims broadcast.

    `scale` defaults to 1/sqrt(query.size(-1)). A bool `attn_mask` lets a query attend where True; a float one is
    added to the scores; `is_causal` lets query i attend to keys 0..i (top-left aligned when L != S). A query row
    that attends to no key gets zeros (PyTorch's safe softmax) instead of NaN. Dropout with probability
    `dropout_p` applies to the attention weights whenever `dropout_p > 0`, as in PyTorch (training or not).
    """
    if is_causal.__class__ is not bool:
        raise not_bool("scaled_dot_product_attention", "is_causal", is_causal)
    if enable_gqa.__class__ is not bool:
        raise not_bool("scaled_dot_product_attention", "enable_gqa", enable_gqa)
    if autocast_state.get() is not None:
        return autocast_call(
            scaled_dot_product_attention, "scaled_dot_product_attention", query, key, value, attn_mask, dropout_p,
            is_causal, scale, enable_gqa
        )
    _check_sdpa_inputs(query, key, value, attn_mask)
    if dropout_p > 1.0:  # PyTorch's check in C++, hence a RuntimeError where F.dropout raises a ValueError
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {dropout_p}")
    if is_causal:
        if attn_mask is not None:
            raise RuntimeError(
                "_scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True"
            )
        attn_mask = ones(query.shape[-2], key.shape[-2], dtype=bool, device=query.device).tril()
    if enable_gqa:
        key, value = _repeat_heads(query, key, value)
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[-1])
    scores = matmul(query, key.transpose(-2, -1)) * scale
    if attn_mask is not None:
        # PyTorch adds the mask in place into the scores: the mask may broadcast to them, not they to it.
        broadcast_into(scores.shape, attn_mask.shape)
        if attn_mask.dtype == np.bool_:
            scores = where(attn_mask, scores, float("-inf"))
        else:
            scores = scores + attn_mask.to(scores.dtype)
        # Rows with no key to attend to would be NaN; they get zero weights and no gradient instead.
        blocked = (scores == float("-inf")).all(-1, keepdim=True)
        if blocked.any():
            scores = where(blocked, 0.0, scores)
            weights = where(blocked, 0.0, softmax(scores, -1))
        else:
            weights = softmax(scores, -1)
    else:
        weights = softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p)
    return matmul(weights, value)


def canonical_mask(mask: Tensor | None, name: str, dtype: np.dtype, other: Tensor | None = None,
                   other_name: str = "") -> Tensor | None:
    """MultiheadAttention's masks as floats to add: a bool True (left out) becomes -inf, False 0. PyTorch warns
    when `other`, the mask this one is merged with, has another dtype."""
    if mask is None:
        return None
    if mask.dtype != np.bool_ and mask.dtype.kind != "f":
        raise AssertionError(f"only bool and floating types of {name} are supported")
    if other is not None and other.dtype != mask.dtype:
        warnings.warn(
            f"Support for mismatched {name} and {other_name} is deprecated. Use same type for both instead.",
            UserWarning, stacklevel=3,
        )
    if mask.dtype == np.bool_:
        return where(mask, float("-inf"), zeros(mask.shape, dtype=dtype, device=mask.device))
    return mask


def _pad_key(mask: Tensor | None) -> Tensor | None:
    """A mask with a zero (attend) column for one more key: bias_k's or the zero key of add_zero_attn."""
    return None if mask is None else pad(mask, (0, 1))


def _heads_first(x: Tensor, batch_heads: int, head_dim: int) -> Tensor:
    """(S, N, E) projections as (N * num_heads, S, head_dim)."""
    return x.view(x.shape[0], batch_heads, head_dim).transpose(0, 1)


def _static(x: Tensor, name: str, batch_heads: int, head_dim: int) -> Tensor:
    """A given (N * num_heads, S, head_dim) key or value, used in place of the projected one."""
    for axis, expected in ((0, batch_heads), (2, head_dim)):
        if x.shape[axis] != expected:
            raise AssertionError(f"expecting {name}.size({axis}) of {expected}, but got {x.shape[axis]}")
    return x


def _mha_shape_check(query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None,
                     attn_mask: Tensor | None, num_heads: int) -> bool:
    """PyTorch's checks of the inputs' ranks; True when the inputs are batched (3-D)."""
    q, k, v = query.ndim, key.ndim, value.ndim
    if q not in (2, 3):
        raise AssertionError(f"query should be unbatched 2D or batched 3D tensor but received {q}-D query tensor")
    kind = "batched (3-D)" if q == 3 else "unbatched (2-D)"
    if k != q or v != q:
        raise AssertionError(
            f"For {kind} `query`, expected `key` and `value` to be {q}-D but found {k}-D and {v}-D tensors respectively"
        )
    if key_padding_mask is not None and key_padding_mask.ndim != q - 1:
        raise AssertionError(
            f"For {kind} `query`, expected `key_padding_mask` to be `None` or {q - 1}-D but found "
            f"{key_padding_mask.ndim}-D tensor instead"
        )
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(
                f"For {kind} `query`, expected `attn_mask` to be `None`, 2-D or 3-D but found {attn_mask.ndim}-D "
                "tensor instead"
            )
        expected = (num_heads, query.shape[0], key.shape[0])
        if q == 2 and attn_mask.ndim == 3 and tuple(attn_mask.shape) != expected:
            raise AssertionError(f"Expected `attn_mask` shape to be {expected} but got {tuple(attn_mask.shape)}")
    return q == 3


def multi_head_attention_forward(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Tensor | None,
    in_proj_bias: Tensor | None,
    bias_k: Tensor | None,
    bias_v: Tensor | None,
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Tensor | None,
    training: bool = True,
    key_padding_mask: Tensor | None = None,
    need_weights: bool = True,
    attn_mask: Tensor | None = None,
    use_separate_proj_weight: bool = False,
    q_proj_weight: Tensor | None = None,
    k_proj_weight: Tensor | None = None,
    v_proj_weight: Tensor | None = None,
    static_k: Tensor | None = None,
    static_v: Tensor | None = None,
    average_attn_weights: bool = True,
    is_causal: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """PyTorch's multi-head attention on sequence-first inputs: (L, N, E) query, (S, N, E_k) key, (S, N, E_v)
    value, or unbatched (L, E). Returns the output and, with `need_weights`, the attention weights (N, L, S),
    averaged over heads unless `average_attn_weights=False` (then (N, num_heads, L, S)). `static_k` and
    `static_v`, (N * num_heads, S, E / num_heads), replace the projected key and value (incremental decoding)."""
    is_batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not is_batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask", query.dtype, attn_mask, "attn_mask")
    if is_causal and attn_mask is None:
        raise RuntimeError(
            "Need attn_mask if specifying the is_causal hint. You may use the Transformer module method "
            "`generate_square_subsequent_mask` to create this mask."
        )
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None  # the hint stands for the mask: scaled_dot_product_attention makes it
    else:
        attn_mask = canonical_mask(attn_mask, "attn_mask", query.dtype)
        is_causal = is_causal and key_padding_mask is None  # merged with the padding, the mask is no longer causal
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"was expecting embedding dimension of {embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"embed_dim {embed_dim} not divisible by num_heads {num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(
                f"key's sequence and batch dims {key.shape[:2]} do not match value's {value.shape[:2]}"
            )
        weights = (q_proj_weight, k_proj_weight, v_proj_weight)
        for name, weight in zip("qkv", weights, strict=True):
            if weight is None:
                raise AssertionError(f"use_separate_proj_weight is True but {name}_proj_weight is None")
    else:
        if key.shape != value.shape:
            raise AssertionError(f"key shape {key.shape} does not match value shape {value.shape}")
        if in_proj_weight is None:
            raise AssertionError("use_separate_proj_weight is False but in_proj_weight is None")
        weights = in_proj_weight.chunk(3)
    biases = (None,) * 3 if in_proj_bias is None else in_proj_bias.chunk(3)
    q, k, v = (linear(x, w, b) for x, w, b in zip((query, key, value), weights, biases, strict=True))
    src_len = key.shape[0]
    if attn_mask is not None:
        if attn_mask.ndim == 2:
            if attn_mask.shape != (tgt_len, src_len):
                raise RuntimeError(
                    f"The shape of the 2D attn_mask is {attn_mask.shape}, but should be {(tgt_len, src_len)}."
                )
            attn_mask = attn_mask.unsqueeze(0)
        elif attn_mask.shape != (bsz * num_heads, tgt_len, src_len):
            raise RuntimeError(
                f"The shape of the 3D attn_mask is {attn_mask.shape}, but should be "
                f"{(bsz * num_heads, tgt_len, src_len)}."
            )
    if bias_k is not None and bias_v is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError(f"bias cannot be added to static {'key' if static_k is not None else 'value'}.")
        k = cat([k, bias_k.repeat(1, bsz, 1)])
        v = cat([v, bias_v.repeat(1, bsz, 1)])
        attn_mask, key_padding_mask = _pad_key(attn_mask), _pad_key(key_padding_mask)
    elif bias_k is not None or bias_v is not None:
        set_name, unset_name = ("bias_k", "bias_v") if bias_k is not None else ("bias_v", "bias_k")
        raise AssertionError(f"{set_name} is set but {unset_name} is None")
    heads = bsz * num_heads
    q = _heads_first(q, heads, head_dim)
    k = _heads_first(k, heads, head_dim) if static_k is None else _static(static_k, "static_k", heads, head_dim)
    v = _heads_first(v, heads, head_dim) if static_v is None else _static(static_v, "static_v", heads, head_dim)
    if add_zero_attn:
        k = cat([k, zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)], 1)
        v = cat([v, zeros(bsz * num_heads, 1, head_dim, dtype=v.dtype, device=v.device)], 1)
        attn_mask, key_padding_mask = _pad_key(attn_mask), _pad_key(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        for axis, expected in enumerate((bsz, src_len)):
            if key_padding_mask.shape[axis] != expected:
                raise AssertionError(
                    f"Expected key_padded_mask.shape[{axis}] to be {expected}, but got {key_padding_mask.shape[axis]}"
                )
        key_padding_mask = (
            key_padding_mask.view(bsz, 1, 1, src_len).expand(-1, num_heads, -1, -1).reshape(bsz * num_heads, 1, src_len)
        )
        attn_mask = key_padding_mask if attn_mask is None else attn_mask + key_padding_mask
    if not training:
        dropout_p = 0.0
    if need_weights:
        # PyTorch's plain softmax here: a query row with every key masked is NaN, unlike the path below.
        q_scaled = q * math.sqrt(1.0 / float(head_dim))
        if attn_mask is None:
            scores = matmul(q_scaled, k.transpose(-2, -1))
        else:  # PyTorch's baddbmm: a float mask of another dtype is refused, and autocast casts it with q and k
            scores = baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        attn_weights = softmax(scores, -1)
        if dropout_p > 0.0:
            attn_weights = dropout(attn_weights, dropout_p)
        output = matmul(attn_weights, v).transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        attn_weights = attn_weights.view(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            attn_weights = attn_weights.mean(1)
    else:
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else attn_mask.view(
                bsz, num_heads, -1, src_len)
        q = q.view(bsz, num_heads, tgt_len, head_dim)
        k = k.view(bsz, num_heads, src_len, head_dim)
        v = v.view(bsz, num_heads, src_len, head_dim)
        output = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
        output = output.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
        attn_weights = None
    output = linear(output, out_proj_weight, out_proj_bias).view(tgt_len, bsz, -1)
    if not is_batched:
        output = output.squeeze(1)
        attn_weights = None if attn_weights is None else attn_weights.squeeze(0)
    return output, attn_weights
