"""MultiheadAttention, TransformerEncoderLayer and TransformerEncoder, with PyTorch's parameters, initialisation
and masks; the arithmetic is `ops.attention`'s.

PyTorch's eval-mode fast paths (the fused kernel and nested tensors) are left out: their results are the same
except that with nested tensors the padded positions of a TransformerEncoder's output come back as zeros.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from actorgrad.creation import empty, full
from actorgrad.nn import functional as F
from actorgrad.nn import init
from actorgrad.nn.activation import GELU, Dropout, ReLU
from actorgrad.nn.container import ModuleList
from actorgrad.nn.layers import LayerNorm, Linear
from actorgrad.nn.module import Module
from actorgrad.nn.parameter import Parameter
from actorgrad.ops.attention import canonical_mask, multi_head_attention_forward
from actorgrad.tensor import Tensor


class NonDynamicallyQuantizableLinear(Linear):
    """MultiheadAttention's out_proj: a Linear under PyTorch's name for it (which shows in reprs)."""


class MultiheadAttention(Module):
    """Attention over `num_heads` heads of size embed_dim / num_heads, sequence-first unless `batch_first`.

    With kdim == vdim == embed_dim the three input projections are one (3 * embed_dim, embed_dim)
    `in_proj_weight`; otherwise they are `q_proj_weight`, `k_proj_weight` and `v_proj_weight`.
    """

    def __init__(
        self,
        embed_dim: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        add_bias_kv: bool = False,
        add_zero_attn: bool = False,
        kdim: int | None = None,
        vdim: int | None = None,
        batch_first: bool = False,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(
                f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                f"num_heads={num_heads} instead"
            )
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads = num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(empty(3 * embed_dim, embed_dim, **factory))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(empty(embed_dim, embed_dim, **factory))
            self.k_proj_weight = Parameter(empty(embed_dim, self.kdim, **factory))
            self.v_proj_weight = Parameter(empty(embed_dim, self.vdim, **factory))
            self.register_parameter("in_proj_weight", None)
        self.register_parameter("in_proj_bias", Parameter(empty(3 * embed_dim, **factory)) if bias else None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, **factory)
        if add_bias_kv:
            self.bias_k = Parameter(empty(1, 1, embed_dim, **factory))
            self.bias_v = Parameter(empty(1, 1, embed_dim, **factory))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's init: Xavier-uniform input projections, zero biases; out_proj.weight keeps Linear's init."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for weight in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(weight)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        key_padding_mask: Tensor | None = None,
        need_weights: bool = True,
        attn_mask: Tensor | None = None,
        average_attn_weights: bool = True,
        is_causal: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        """Bool masks mark what is left out (True = masked), float masks are added to the scores."""
        is_batched = query.ndim == 3
        key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask", query.dtype, attn_mask, "attn_mask")
        attn_mask = canonical_mask(attn_mask, "attn_mask", query.dtype)
        if self.batch_first and is_batched:
            query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        separate = not self._qkv_same_embed_dim
        output, weights = multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias,
            self.bias_k, self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=separate, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal,
        )
        if self.batch_first and is_batched:
            output = output.transpose(1, 0)
        return output, weights


def _activation(name: str) -> Callable[[Tensor], Tensor]:
    if name == "relu":
        return F.relu
    if name == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {name}")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block (linear1, activation, linear2), each with dropout, a residual
    connection and a LayerNorm: after the sum (post-norm) or, with `norm_first`, on the block's input."""

    def __init__(
        self,
        d_model: int,
        nhead: int,
        dim_feedforward: int = 2048,
        dropout: float = 0.1,
        activation: str | Callable[[Tensor], Tensor] = F.relu,
        layer_norm_eps: float = 1e-5,
        batch_first: bool = False,
        norm_first: bool = False,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        factory = {"device": device, "dtype": dtype}
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                            **factory)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        if isinstance(activation, str):
            activation = _activation(activation)
        if activation is F.relu or isinstance(activation, ReLU):
            self.activation_relu_or_gelu = 1
        elif activation is F.gelu or isinstance(activation, GELU):
            self.activation_relu_or_gelu = 2
        else:
            self.activation_relu_or_gelu = 0
        self.activation = activation

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        src_key_padding_mask = canonical_mask(src_key_padding_mask, "src_key_padding_mask", src.dtype, src_mask,
                                              "src_mask")
        src_mask = canonical_mask(src_mask, "src_mask", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x))
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x))

    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, key_padding_mask: Tensor | None,
                  is_causal: bool) -> Tensor:
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask, need_weights=False,
                           is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))


def _is_causal_mask(mask: Tensor | None, is_causal: bool | None, size: int) -> bool:
    """PyTorch's reading of `is_causal=None`: True when `mask` is exactly the square causal float mask."""
    if is_causal is not None or mask is None:
        return is_causal is True
    causal = full((size, size), float("-inf"), dtype=mask.dtype, device=mask.device).triu(1)
    return tuple(mask.shape) == (size, size) and bool((mask == causal).all())


class TransformerEncoder(Module):
    """`num_layers` deep copies of `encoder_layer` (as `layers.0`, `layers.1`, ...), then the optional `norm`."""

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor = enable_nested_tensor
        self.mask_check = mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        batch_first = self.layers[0].self_attn.batch_first
        seq_len = src.shape[1 if batch_first and src.ndim == 3 else 0]
        src_key_padding_mask = canonical_mask(src_key_padding_mask, "src_key_padding_mask", src.dtype, mask, "mask")
        mask = canonical_mask(mask, "mask", src.dtype)
        is_causal = _is_causal_mask(mask, is_causal, seq_len)
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=is_causal, src_key_padding_mask=src_key_padding_mask)
        return output if self.norm is None else self.norm(output)
