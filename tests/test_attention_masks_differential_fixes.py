"""Differences from PyTorch found by comparing multi-head attention and the transformer's masks with it, each
fixed: F.multi_head_attention_forward's static_k and static_v (a given per-head key and value in place of the
projected ones) and its argument checks (a bias_k without a bias_v, a missing projection weight, a bias added
to a static key or value)."""

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad.autograd import gradcheck

RNG = np.random.default_rng(0)
E, HEADS, L, S, N = 6, 2, 3, 5, 2
HEAD_DIM = E // HEADS


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _reference(query, w_in, b_in, w_out, b_out, static_k, static_v, padding=None):
    """The documented formula with the key and value heads given: per head h of batch n,
    softmax(q_h k_h^T / sqrt(head_dim) + mask) v_h, heads joined, then the output projection; the weights are
    averaged over heads. `padding` (N, S) bool marks keys left out."""
    q = query @ w_in[:E].T + b_in[:E]                                  # (L, N, E)
    q = q.reshape(L, N * HEADS, HEAD_DIM).transpose(1, 0, 2)           # (N*H, L, hd)
    scores = q @ static_k.transpose(0, 2, 1) / np.sqrt(HEAD_DIM)       # (N*H, L, S')
    if padding is not None:
        scores = scores + np.where(np.repeat(padding, HEADS, 0), -np.inf, 0.0)[:, None, :]
    weights = _softmax(scores)
    out = (weights @ static_v).transpose(1, 0, 2).reshape(L, N, E)
    return out @ w_out.T + b_out, weights.reshape(N, HEADS, L, -1).mean(1)


def _arguments(**changes):
    """multi_head_attention_forward's arguments in float64, sequence-first, with `changes` applied."""
    args = {
        "query": RNG.normal(size=(L, N, E)), "key": RNG.normal(size=(S, N, E)), "value": RNG.normal(size=(S, N, E)),
        "embed_dim_to_check": E, "num_heads": HEADS, "in_proj_weight": RNG.normal(size=(3 * E, E)),
        "in_proj_bias": RNG.normal(size=3 * E), "bias_k": None, "bias_v": None, "add_zero_attn": False,
        "dropout_p": 0.0, "out_proj_weight": RNG.normal(size=(E, E)), "out_proj_bias": RNG.normal(size=E),
        "training": False,
    }
    args.update(changes)
    return {name: ag.tensor(v) if isinstance(v, np.ndarray) else v for name, v in args.items()}


@pytest.mark.parametrize("static_len", [S, S + 2])
@pytest.mark.parametrize("need_weights", [True, False])
def test_static_key_and_value_replace_the_projected_ones(static_len, need_weights):
    static_k, static_v = (RNG.normal(size=(N * HEADS, static_len, HEAD_DIM)) for _ in range(2))
    padding = RNG.random((N, static_len)) < 0.3
    padding[:, 0] = False
    args = _arguments(static_k=static_k, static_v=static_v, key_padding_mask=padding, need_weights=need_weights)
    out, weights = F.multi_head_attention_forward(**args)
    want_out, want_weights = _reference(*(args[name].numpy() for name in (
        "query", "in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias")), static_k, static_v, padding)
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-10, atol=1e-12)
    if need_weights:
        np.testing.assert_allclose(weights.numpy(), want_weights, rtol=1e-10, atol=1e-12)
    else:
        assert weights is None


def test_static_key_and_value_gradients_match_finite_differences():
    args = _arguments()
    static_k, static_v = (ag.tensor(RNG.normal(size=(N * HEADS, S, HEAD_DIM)), requires_grad=True) for _ in range(2))
    query = ag.tensor(RNG.normal(size=(L, N, E)), requires_grad=True)

    def attend(q, k, v):
        return F.multi_head_attention_forward(**{**args, "query": q, "static_k": k, "static_v": v})[0]

    assert gradcheck(attend, (query, static_k, static_v), eps=1e-6, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("name, shape, text", [
    ("static_k", (N * HEADS + 1, S, HEAD_DIM), f"expecting static_k.size(0) of {N * HEADS}, but got {N * HEADS + 1}"),
    ("static_v", (N * HEADS, S, HEAD_DIM + 1), f"expecting static_v.size(2) of {HEAD_DIM}, but got {HEAD_DIM + 1}"),
])
def test_static_key_or_value_of_the_wrong_shape_is_refused(name, shape, text):
    with pytest.raises(AssertionError, match=text.replace("(", r"\(").replace(")", r"\)")):
        F.multi_head_attention_forward(**_arguments(**{name: RNG.normal(size=shape)}))


@pytest.mark.parametrize("changes, text", [
    ({"bias_k": RNG.normal(size=(1, 1, E))}, "bias_k is set but bias_v is None"),
    ({"bias_v": RNG.normal(size=(1, 1, E))}, "bias_v is set but bias_k is None"),
    ({"bias_k": RNG.normal(size=(1, 1, E)), "bias_v": RNG.normal(size=(1, 1, E)),
      "static_k": RNG.normal(size=(N * HEADS, S, HEAD_DIM))}, "bias cannot be added to static key."),
    ({"bias_k": RNG.normal(size=(1, 1, E)), "bias_v": RNG.normal(size=(1, 1, E)),
      "static_v": RNG.normal(size=(N * HEADS, S, HEAD_DIM))}, "bias cannot be added to static value."),
    ({"in_proj_weight": None}, "use_separate_proj_weight is False but in_proj_weight is None"),
    ({"use_separate_proj_weight": True, "in_proj_weight": None}, "use_separate_proj_weight is True but q_proj_weight"),
    ({"use_separate_proj_weight": True, "q_proj_weight": RNG.normal(size=(E, E)),
      "v_proj_weight": RNG.normal(size=(E, E))}, "use_separate_proj_weight is True but k_proj_weight is None"),
])
def test_inconsistent_arguments_get_pytorchs_assertion(changes, text):
    with pytest.raises(AssertionError, match=text):
        F.multi_head_attention_forward(**_arguments(**changes))


@pytest.mark.gpu
def test_static_key_and_value_on_cuda_match_the_cpu(cupy):
    static_k, static_v = (RNG.normal(size=(N * HEADS, S, HEAD_DIM)) for _ in range(2))
    args = _arguments()
    want = F.multi_head_attention_forward(**args, static_k=ag.tensor(static_k), static_v=ag.tensor(static_v))[0]
    on_device = {name: v.to("cuda") if isinstance(v, ag.Tensor) else v for name, v in args.items()}
    k_cuda = ag.tensor(static_k, device="cuda", requires_grad=True)
    got = F.multi_head_attention_forward(**on_device, static_k=k_cuda, static_v=ag.tensor(static_v, device="cuda"))[0]
    assert got.device == ag.device("cuda:0")
    np.testing.assert_allclose(got.detach().cpu().numpy(), want.numpy(), rtol=1e-10, atol=1e-12)
    got.sum().backward()
    assert k_cuda.grad.device == ag.device("cuda:0")
