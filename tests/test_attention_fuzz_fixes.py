"""Differences from PyTorch found by fuzzing attention (scaled_dot_product_attention, multi_head_attention_forward,
MultiheadAttention and the transformer layers) against it, each fixed: with `need_weights=True` the scores are
PyTorch's baddbmm(mask, q, k^T), which refuses a float mask (attn_mask or a float key_padding_mask merged into it)
whose dtype is not the query's, where actorgrad promoted (float32 mask, float64 query) or failed later with another
text (float64 mask, float32 query). The path without weights (scaled_dot_product_attention) takes such masks."""

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck

E, HEADS, L, S, N = 4, 2, 3, 5, 2
HEAD_DIM = E // HEADS


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _reference(query, key, value, w_in, b_in, w_out, b_out, mask):
    """The documented formula written out: per head h, softmax(q_h k_h^T / sqrt(head_dim) + mask) v_h, heads
    joined, then the output projection. Sequence-first (L, N, E) inputs; `mask` (L, S) is added to the scores."""
    q, k, v = (x @ w.T + b for x, w, b in zip((query, key, value), np.split(w_in, 3), np.split(b_in, 3), strict=True))
    heads = [x.reshape(x.shape[0], N * HEADS, HEAD_DIM).transpose(1, 0, 2) for x in (q, k, v)]
    weights = _softmax(heads[0] @ heads[1].transpose(0, 2, 1) / np.sqrt(HEAD_DIM) + mask)
    out = (weights @ heads[2]).transpose(1, 0, 2).reshape(L, N, E)
    return out @ w_out.T + b_out, weights.reshape(N, HEADS, L, S).mean(1)


def _module(dtype):
    rng = np.random.default_rng(0)
    module = ag.nn.MultiheadAttention(E, HEADS, dtype=dtype)
    arrays = {"in_proj_weight": rng.normal(size=(3 * E, E)), "in_proj_bias": rng.normal(size=3 * E),
              "out_proj.weight": rng.normal(size=(E, E)), "out_proj.bias": rng.normal(size=E)}
    module.load_state_dict({name: ag.tensor(a.astype(dtype)) for name, a in arrays.items()})
    return module.eval(), arrays


def _inputs(dtype):
    rng = np.random.default_rng(1)
    arrays = [rng.normal(size=(length, N, E)) for length in (L, S, S)]
    mask = np.triu(np.full((L, S), -np.inf), 2) + rng.normal(size=(L, S))
    return arrays, mask


@pytest.mark.parametrize(("query_dtype", "mask_dtype", "names"), [
    (np.float64, np.float32, "input float, batch1: double, batch2: double"),
    (np.float32, np.float64, "input double, batch1: float, batch2: float"),
])
@pytest.mark.parametrize("as_padding", [False, True])
def test_weights_path_refuses_a_float_mask_of_another_dtype(query_dtype, mask_dtype, names, as_padding):
    module, _ = _module(query_dtype)
    arrays, mask = _inputs(query_dtype)
    query, key, value = (ag.tensor(a.astype(query_dtype)) for a in arrays)
    kwargs = ({"key_padding_mask": ag.tensor(mask[:N].astype(mask_dtype))} if as_padding
              else {"attn_mask": ag.tensor(mask.astype(mask_dtype))})
    with pytest.raises(RuntimeError, match=f"^Input dtypes must be the same, got: {names}$"):
        module(query, key, value, **kwargs)


def test_path_without_weights_takes_a_float32_mask_with_float64_inputs():
    """What a float64 model meets with `generate_square_subsequent_mask`'s default float32 mask."""
    module, params = _module(np.float64)
    arrays, mask = _inputs(np.float64)
    got, weights = module(*(ag.tensor(a) for a in arrays), attn_mask=ag.tensor(mask.astype(np.float32)),
                          need_weights=False)
    want, _ = _reference(*arrays, params["in_proj_weight"], params["in_proj_bias"], params["out_proj.weight"],
                         params["out_proj.bias"], mask.astype(np.float32).astype(np.float64))
    assert weights is None and got.dtype == ag.float64
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-10, atol=1e-12)


def test_weights_path_with_a_mask_of_the_query_dtype_matches_the_formula():
    module, params = _module(np.float64)
    arrays, mask = _inputs(np.float64)
    got, weights = module(*(ag.tensor(a) for a in arrays), attn_mask=ag.tensor(mask))
    want, want_weights = _reference(*arrays, params["in_proj_weight"], params["in_proj_bias"],
                                    params["out_proj.weight"], params["out_proj.bias"], mask)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights.detach().numpy(), want_weights, rtol=1e-10, atol=1e-12)
    mask_tensor = ag.tensor(np.where(np.isinf(mask), -1e3, mask), requires_grad=True)
    query = ag.tensor(arrays[0], requires_grad=True)
    assert gradcheck(lambda q, m: module(q, *(ag.tensor(a) for a in arrays[1:]), attn_mask=m)[0],
                     (query, mask_tensor))


def test_autocast_runs_the_masked_scores_in_its_dtype():
    """Under autocast the scores are a baddbmm of the lower-precision list: the float32 mask is cast with q and
    k, so the weights come back in float16 (they were float32, promoted by the mask)."""
    module, params = _module(np.float32)
    arrays, mask = _inputs(np.float32)
    with ag.autocast("cpu", dtype=ag.float16):
        got, weights = module(*(ag.tensor(a.astype(np.float32)) for a in arrays),
                              attn_mask=ag.tensor(mask.astype(np.float32)))
    assert got.dtype == weights.dtype == ag.float16
    want, want_weights = _reference(*arrays, params["in_proj_weight"], params["in_proj_bias"],
                                    params["out_proj.weight"], params["out_proj.bias"], mask)
    np.testing.assert_allclose(weights.detach().numpy(), want_weights, atol=2e-2)
    np.testing.assert_allclose(got.detach().numpy(), want, rtol=2e-2, atol=5e-2)


@pytest.mark.gpu
def test_weights_path_refuses_a_mixed_dtype_mask_on_cuda(cupy):
    module, _ = _module(np.float64)
    arrays, mask = _inputs(np.float64)
    module = module.to("cuda")
    query, key, value = (ag.tensor(a, device="cuda") for a in arrays)
    with pytest.raises(RuntimeError, match="^Input dtypes must be the same, got: input float, batch1: double"):
        module(query, key, value, attn_mask=ag.tensor(mask.astype(np.float32), device="cuda"))
    got = module(query, key, value, attn_mask=ag.tensor(mask.astype(np.float32), device="cuda"), need_weights=False)[0]
    assert got.device == ag.device("cuda:0")
