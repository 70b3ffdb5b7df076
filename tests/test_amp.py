"""Automatic mixed precision: which ops an autocast region casts and to what, gradients through the casts, the
per-context state, and GradScaler's state machine on a real model and optimizer."""

import contextvars
import pickle
import threading
import warnings

import numpy as np
import pytest
import trio

import actorgrad as ag
import actorgrad.nn.functional as F

RNG = np.random.default_rng(5)
F16, F32, F64 = ag.float16, ag.float32, ag.float64


def t(*shape, dtype=F32, low=0.5, high=1.5, requires_grad=False):
    return ag.tensor(RNG.uniform(low, high, shape).astype(dtype), requires_grad=requires_grad)


def labels(*values):
    return ag.tensor(np.array(values, dtype=np.int64))


# What PyTorch's CPU lists say each op runs in, written out here (not read from actorgrad's tables).
CPU_LOWER = {
    "matmul": lambda m: ag.matmul(m(3, 4), m(4, 2)),
    "mm": lambda m: ag.mm(m(3, 4), m(4, 2)),
    "bmm": lambda m: ag.bmm(m(2, 3, 4), m(2, 4, 2)),
    "addmm": lambda m: ag.addmm(m(3, 2), m(3, 4), m(4, 2)),
    "addbmm": lambda m: ag.addbmm(m(3, 2), m(2, 3, 4), m(2, 4, 2)),
    "baddbmm": lambda m: ag.baddbmm(m(2, 3, 2), m(2, 3, 4), m(2, 4, 2)),
    "linear": lambda m: F.linear(m(3, 4), m(2, 4), m(2)),
    "einsum": lambda m: ag.einsum("ij,jk->ik", m(3, 4), m(4, 2)),
    "multi_dot": lambda m: ag.linalg.multi_dot([m(3, 4), m(4, 2), m(2, 2)]),
    "chain_matmul": lambda m: ag.chain_matmul(m(3, 4), m(4, 2), m(2, 2)),
    "vecdot": lambda m: ag.linalg.vecdot(m(3, 4), m(3, 4)),
    "conv1d": lambda m: F.conv1d(m(1, 2, 5), m(3, 2, 3), m(3)),
    "conv2d": lambda m: F.conv2d(m(1, 2, 5, 5), m(3, 2, 3, 3)),
    "conv3d": lambda m: F.conv3d(m(1, 1, 3, 3, 3), m(2, 1, 2, 2, 2)),
    "conv_transpose1d": lambda m: F.conv_transpose1d(m(1, 2, 5), m(2, 3, 3)),
    "conv_transpose2d": lambda m: F.conv_transpose2d(m(1, 2, 3, 3), m(2, 3, 2, 2)),
    "prelu": lambda m: F.prelu(m(2, 3), m(1)),
    "scaled_dot_product_attention": lambda m: F.scaled_dot_product_attention(m(1, 2, 3), m(1, 2, 3), m(1, 2, 3)),
}
CPU_FP32 = {
    "mse_loss": lambda m: F.mse_loss(m(4), m(4)),
    "l1_loss": lambda m: F.l1_loss(m(4), m(4)),
    "smooth_l1_loss": lambda m: F.smooth_l1_loss(m(4), m(4)),
    "huber_loss": lambda m: F.huber_loss(m(4), m(4)),
    "nll_loss": lambda m: F.nll_loss(m(2, 3), labels(0, 2)),
    "cross_entropy": lambda m: F.cross_entropy(m(2, 3), labels(0, 2)),
    "kl_div": lambda m: F.kl_div(m(4), m(4), reduction="batchmean"),
    "binary_cross_entropy": lambda m: F.binary_cross_entropy(m(4) * 0.5, m(4) * 0.5),
    "binary_cross_entropy_with_logits": lambda m: F.binary_cross_entropy_with_logits(m(4), m(4) * 0.5),
    "soft_margin_loss": lambda m: F.soft_margin_loss(m(4), m(4)),
    "margin_ranking_loss": lambda m: F.margin_ranking_loss(m(4), m(4), m(4)),
    "hinge_embedding_loss": lambda m: F.hinge_embedding_loss(m(4), m(4)),
    "poisson_nll_loss": lambda m: F.poisson_nll_loss(m(4), m(4)),
    "multi_margin_loss": lambda m: F.multi_margin_loss(m(2, 3), labels(0, 2)),
    "cosine_embedding_loss": lambda m: F.cosine_embedding_loss(m(2, 3), m(2, 3), labels(1, -1)),
    "triplet_margin_loss": lambda m: F.triplet_margin_loss(m(2, 3), m(2, 3), m(2, 3)),
    "cdist": lambda m: ag.cdist(m(2, 3), m(4, 3)),
    "prod": lambda m: m(4).prod(),
    "grid_sample": lambda m: F.grid_sample(m(1, 1, 3, 3), m(1, 2, 2, 2) - 1.0, align_corners=False),
}
# Ops off the CPU lists (CUDA has some of them on its float32 list): they keep float16 inputs float16 on CPU.
CPU_UNLISTED = {
    "exp": lambda m: m(4).exp(),
    "sum": lambda m: m(4).sum(),
    "softmax": lambda m: F.softmax(m(2, 3), 1),
    "log_softmax": lambda m: m(2, 3).log_softmax(1),
    "layer_norm": lambda m: F.layer_norm(m(2, 3), (3,)),
    "pow": lambda m: m(4) ** 2,
    "mv": lambda m: ag.mv(m(3, 4), m(4)),
    "relu": lambda m: F.relu(m(4)),
    "mul": lambda m: m(4) * m(4),
}


def half(*shape):
    return t(*shape, dtype=F16)


def single(*shape):
    return t(*shape, dtype=F32)


@pytest.mark.filterwarnings("ignore:torch.chain_matmul is deprecated")
@pytest.mark.parametrize("name", list(CPU_LOWER))
def test_lower_precision_list_runs_in_the_autocast_dtype_on_cpu(name):
    with ag.autocast("cpu", dtype=F16):
        assert CPU_LOWER[name](single).dtype == F16
    assert CPU_LOWER[name](single).dtype == F32  # outside the region, nothing changes


@pytest.mark.filterwarnings("ignore:overflow encountered in cast")  # float16 grid_sample's own clip
@pytest.mark.parametrize("name", list(CPU_FP32))
def test_float32_list_runs_in_float32_on_cpu(name):
    with ag.autocast("cpu", dtype=F16):
        assert CPU_FP32[name](half).dtype == F32
    if name == "multi_margin_loss":  # outside autocast PyTorch's CPU kernel refuses float16
        with pytest.raises(NotImplementedError, match="not implemented for 'Half'"):
            CPU_FP32[name](half)
    else:
        assert CPU_FP32[name](half).dtype == F16


@pytest.mark.parametrize("name", list(CPU_UNLISTED))
def test_ops_off_the_cpu_lists_keep_their_dtype(name):
    with ag.autocast("cpu", dtype=F16):
        assert CPU_UNLISTED[name](half).dtype == F16
        assert CPU_UNLISTED[name](single).dtype == F32


def test_float64_and_integer_tensors_are_never_cast():
    with ag.autocast("cpu", dtype=F16):
        assert ag.matmul(t(2, 3, dtype=F64), t(3, 2, dtype=F64)).dtype == F64
        assert F.mse_loss(t(3, dtype=F64), t(3, dtype=F64)).dtype == F64
        ints = ag.tensor(np.arange(6).reshape(2, 3))
        assert (ints @ ints.T).dtype == ag.int64


def test_mixed_inputs_of_a_lower_op_meet_in_the_autocast_dtype():
    """float16 and float32 operands, which a plain matmul refuses, both run in float16."""
    a, b = half(3, 4), single(4, 2)
    with pytest.raises(RuntimeError):
        ag.matmul(a, b)
    with ag.autocast("cpu", dtype=F16):
        assert ag.matmul(a, b).dtype == F16


def test_cpu_promote_list_runs_index_copy_in_the_widest_dtype():
    with ag.autocast("cpu", dtype=F16):
        out = half(3).index_copy(0, labels(1), single(1))
    assert out.dtype == F32


def test_leaf_gradients_keep_the_leaf_dtype_and_match_float64():
    """loss = sum(x @ w) in float16: dL/dx = 1 w^T, dL/dw = x^T 1, computed here in float64."""
    x, w = t(3, 4, requires_grad=True), t(4, 2, requires_grad=True)
    with ag.autocast("cpu", dtype=F16):
        y = x @ w
        loss = y.float().sum()
    loss.backward()
    assert y.dtype == F16 and x.grad.dtype == F32 and w.grad.dtype == F32
    xs, ws = x.detach().numpy().astype(np.float64), w.detach().numpy().astype(np.float64)
    np.testing.assert_allclose(x.grad.numpy(), np.ones((3, 2)) @ ws.T, rtol=2e-3)
    np.testing.assert_allclose(w.grad.numpy(), xs.T @ np.ones((3, 2)), rtol=2e-3)


def test_float32_list_gradient_flows_back_to_a_float16_leaf():
    """mse_loss of float16 leaves runs in float32; its gradient 2 (a - b) / n comes back as float16."""
    a, b = t(6, dtype=F16, requires_grad=True), t(6, dtype=F16)
    with ag.autocast("cpu", dtype=F16):
        loss = F.mse_loss(a, b)
    assert loss.dtype == F32
    loss.backward()
    assert a.grad.dtype == F16
    expected = 2 * (a.detach().numpy().astype(np.float64) - b.numpy().astype(np.float64)) / 6
    np.testing.assert_allclose(a.grad.numpy().astype(np.float64), expected, rtol=1e-3, atol=1e-4)


def test_gradient_through_a_cast_and_back_is_the_identity_cast():
    """A float32 leaf through a float16 linear and a float32-list loss: poisson_nll_loss(z, 0) = mean(exp(z)) with
    z = x, so d/dx = exp(x) / 5, to float16 accuracy."""
    x = t(5, requires_grad=True)
    with ag.autocast("cpu", dtype=F16):
        loss = F.poisson_nll_loss(F.linear(x.reshape(1, 5), ag.eye(5)), ag.zeros(1, 5), log_input=True)
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp(x.detach().numpy().astype(np.float64)) / 5, rtol=2e-3)


def test_float64_gradients_inside_a_region_pass_gradcheck():
    """float64 is never cast, so inside a region a float64 graph keeps its exact gradients."""
    a, b = t(3, 4, dtype=F64, requires_grad=True), t(4, 2, dtype=F64, requires_grad=True)
    target = t(3, 2, dtype=F64)
    with ag.autocast("cpu", dtype=F16):
        assert ag.autograd.gradcheck(lambda a, b: F.mse_loss(F.softplus(a @ b), target), (a, b))


def test_settings_outside_a_region_stay_in_their_context():
    def inside():
        ag.amp.set_autocast_dtype("cpu", F16)
        ag.amp.set_autocast_enabled("cpu", True)
        ag.amp.set_autocast_cache_enabled(False)
        out = ag.matmul(single(2, 2), single(2, 2)).dtype
        ag.amp.clear_autocast_cache()
        return out, ag.is_autocast_enabled("cpu"), ag.amp.is_autocast_cache_enabled()

    assert contextvars.copy_context().run(inside) == (F16, True, False)
    assert not ag.is_autocast_enabled("cpu") and ag.amp.is_autocast_cache_enabled()
    with pytest.raises(RuntimeError, match="bfloat16"):
        contextvars.copy_context().run(ag.amp.set_autocast_enabled, "cpu", True)


def test_a_leaf_is_cast_once_per_region_and_again_after_it_changes():
    w = t(3, 3, requires_grad=True)
    x = single(2, 3)
    with ag.autocast("cpu", dtype=F16):
        first, second = x @ w, x @ w
        assert first.grad_fn.next_functions[1][0] is second.grad_fn.next_functions[1][0]
        with ag.no_grad():
            w.mul_(2)
        third = x @ w
        assert third.grad_fn.next_functions[1][0] is not first.grad_fn.next_functions[1][0]
        np.testing.assert_allclose(third.detach().numpy(), 2 * first.detach().numpy(), rtol=1e-3)
    with ag.autocast("cpu", dtype=F16):
        assert (x @ w).grad_fn.next_functions[1][0] is not third.grad_fn.next_functions[1][0]
    with ag.autocast("cpu", dtype=F16, cache_enabled=False):
        assert (x @ w).grad_fn.next_functions[1][0] is not (x @ w).grad_fn.next_functions[1][0]


def test_regions_nest_and_restore_what_they_found():
    assert not ag.is_autocast_enabled("cpu")
    with ag.autocast("cpu", dtype=F16):
        with ag.autocast("cpu", enabled=False):
            assert not ag.is_autocast_enabled("cpu")
            assert ag.matmul(single(2, 2), single(2, 2)).dtype == F32
            with ag.autocast("cpu", dtype=F16):
                assert ag.matmul(single(2, 2), single(2, 2)).dtype == F16
        assert ag.is_autocast_enabled("cpu") and ag.get_autocast_dtype("cpu") == F16
    assert not ag.is_autocast_enabled("cpu") and ag.get_autocast_dtype("cpu") is None
    with pytest.raises(KeyError), ag.autocast("cpu", dtype=F16):
        raise KeyError("leaves the region")
    assert not ag.is_autocast_enabled("cpu")
    assert ag.matmul(single(2, 2), single(2, 2)).dtype == F32


def test_a_decorated_function_runs_in_a_region():
    @ag.autocast("cpu", dtype=F16)
    def forward(a, b):
        return a @ b, ag.is_autocast_enabled("cpu")

    out, inside = forward(single(2, 2), single(2, 2))
    assert out.dtype == F16 and inside and not ag.is_autocast_enabled("cpu")

    @ag.autocast("cpu", dtype=F16)
    def depth(n):  # the same region object entered again before it is left
        return depth(n - 1) if n else ag.is_autocast_enabled("cpu")

    assert depth(2) and not ag.is_autocast_enabled("cpu")
    with pytest.raises(TypeError, match="requires a callable, but got int"):
        ag.autocast("cpu", dtype=F16)(3)


async def test_a_region_in_one_trio_task_leaves_another_untouched():
    seen = {}

    async def inside():
        with ag.autocast("cpu", dtype=F16):
            await trio.sleep(0.01)  # the other task runs while this one is in its region
            seen["inside"] = ag.matmul(single(2, 2), single(2, 2)).dtype

    async def outside():
        await trio.sleep(0.005)
        seen["outside"] = ag.matmul(single(2, 2), single(2, 2)).dtype

    async with trio.open_nursery() as nursery:
        nursery.start_soon(inside)
        nursery.start_soon(outside)
    assert seen == {"inside": F16, "outside": F32}


def test_a_new_thread_starts_without_autocast():
    seen = []
    with ag.autocast("cpu", dtype=F16):
        thread = threading.Thread(target=lambda: seen.append(ag.is_autocast_enabled("cpu")))
        thread.start()
        thread.join()
    assert seen == [False]


def test_bad_arguments_get_pytorchs_errors():
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`, got: `<class 'int'>`"):
        ag.autocast(0)
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda, async_cpu device type at start of device "
                                           "string: xyz"):
        ag.autocast("xyz")
    with pytest.raises(RuntimeError, match="unsupported autocast device_type 'async_cpu'"):
        ag.autocast("async_cpu")
    assert ag.amp.is_autocast_available("cpu") and not ag.amp.is_autocast_available("async_cpu")
    with pytest.raises(RuntimeError, match="bfloat16.*dtype=actorgrad.float16"):
        ag.autocast("cpu")
    ag.autocast("cpu", enabled=False)  # no dtype needed for a disabled region
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not supported"):
        region = ag.autocast("cpu", dtype=F64)
    with region:
        assert not ag.is_autocast_enabled("cpu")


@pytest.mark.skipif(ag.cuda.is_available(), reason="CUDA present")
def test_cuda_region_without_cuda_warns_and_does_nothing():
    with pytest.warns(UserWarning, match="CUDA is not available. Disabling autocast."):
        region = ag.autocast("cuda")
    with region:
        assert not ag.is_autocast_enabled("cuda")


def test_custom_fwd_casts_and_custom_bwd_restores_the_forward_state():
    seen = {}

    class Square(ag.autograd.Function):
        @staticmethod
        @ag.amp.custom_fwd(device_type="cpu", cast_inputs=F32)
        def forward(ctx, x):
            seen["forward"] = (x.dtype, ag.is_autocast_enabled("cpu"))
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @ag.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            seen["backward"] = ag.is_autocast_enabled("cpu")
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = t(3, dtype=F16, requires_grad=True)
    with ag.autocast("cpu", dtype=F16):
        y = Square.apply(x)
    y.sum().backward()
    assert seen == {"forward": (F32, False), "backward": False}
    assert y.dtype == F32 and x.grad.dtype == F16
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        ag.amp.custom_fwd(device_type=None)


# GradScaler


def model_and_optimizer(lr=0.5):
    model = ag.nn.Linear(3, 2)
    with ag.no_grad():
        model.weight.copy_(ag.tensor(RNG.uniform(-1, 1, (2, 3)).astype(np.float32)))
        model.bias.copy_(ag.tensor(RNG.uniform(-1, 1, 2).astype(np.float32)))
    return model, ag.optim.SGD(model.parameters(), lr=lr)


def backward_scaled(scaler, model, x, y):
    with ag.autocast("cpu", dtype=F16):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    return loss


def test_scale_multiplies_tensors_and_nested_sequences():
    scaler = ag.amp.GradScaler("cpu", init_scale=8.0)
    a, b = single(2), half(3)
    scaled = scaler.scale([a, (b, [a])])
    assert isinstance(scaled, list) and isinstance(scaled[1], tuple) and isinstance(scaled[1][1], list)
    np.testing.assert_array_equal(scaled[0].numpy(), a.numpy() * 8)
    assert scaled[1][0].dtype == F16  # a 0-dim float32 scale keeps a float16 output float16
    np.testing.assert_array_equal(scaled[1][0].numpy(), b.numpy() * np.float16(8))
    np.testing.assert_array_equal(list(scaler.scale(iter([a])))[0].numpy(), a.numpy() * 8)
    with pytest.raises(ValueError, match="outputs must be a Tensor or an iterable of Tensors"):
        scaler.scale(3)


def test_a_scaled_step_equals_the_plain_step():
    """A power-of-two scale is undone exactly, so the parameters move as plain SGD on the same loss moves them."""
    x, y = single(4, 3), single(4, 2)
    model, opt = model_and_optimizer()
    plain, plain_opt = model_and_optimizer()
    plain.load_state_dict(model.state_dict())
    scaler = ag.amp.GradScaler("cpu", init_scale=2.0**10)
    backward_scaled(scaler, model, x, y)
    scaler.step(opt)
    scaler.update()
    with ag.autocast("cpu", dtype=F16):
        loss = F.mse_loss(plain(x), y)
    loss.backward()
    plain_opt.step()
    np.testing.assert_array_equal(model.weight.detach().numpy(), plain.weight.detach().numpy())
    np.testing.assert_array_equal(model.bias.detach().numpy(), plain.bias.detach().numpy())


def test_growth_after_growth_interval_clean_steps_and_backoff_on_inf():
    x, y = single(4, 3), single(4, 2)
    model, opt = model_and_optimizer(lr=1e-3)
    scaler = ag.amp.GradScaler("cpu", init_scale=4.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=3)
    history = []
    for _ in range(4):
        opt.zero_grad()
        backward_scaled(scaler, model, x, y)
        scaler.step(opt)
        scaler.update()
        history.append((scaler.get_scale(), scaler._get_growth_tracker()))
    assert history == [(4.0, 1), (4.0, 2), (12.0, 0), (12.0, 1)]
    # an inf in one gradient: the step is skipped, the scale backs off and the count restarts
    opt.zero_grad()
    backward_scaled(scaler, model, x, y)
    model.bias.grad.data[0] = np.inf
    before = [p.detach().clone() for p in model.parameters()]
    assert scaler.step(opt) is None
    scaler.update()
    for p, old in zip(model.parameters(), before):
        np.testing.assert_array_equal(p.detach().numpy(), old.numpy())
    assert (scaler.get_scale(), scaler._get_growth_tracker()) == (3.0, 0)


def test_a_scale_that_would_overflow_float32_is_kept():
    x, y = single(4, 3), single(4, 2)
    model, opt = model_and_optimizer(lr=0.0)
    big = float(np.finfo(np.float32).max) / 2
    scaler = ag.amp.GradScaler("cpu", init_scale=big, growth_factor=4.0, growth_interval=1)
    backward_scaled(scaler, model, x, y)
    for p in model.parameters():  # a scale this large overflows float32 gradients; make them finite
        p.grad = ag.zeros_like(p)
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == np.float32(big) and scaler._get_growth_tracker() == 0


def test_unscale_then_step_and_misuse_errors():
    x, y = single(4, 3), single(4, 2)
    model, opt = model_and_optimizer()
    scaler = ag.amp.GradScaler("cpu", init_scale=16.0)
    with pytest.raises(AssertionError, match="Attempted step but _scale is None.  This may indicate your script"):
        scaler.step(opt)
    with pytest.raises(AssertionError, match="Attempted update but _scale is None"):
        scaler.update()
    backward_scaled(scaler, model, x, y)
    scaled = model.weight.grad.numpy().copy()
    scaler.unscale_(opt)
    np.testing.assert_array_equal(model.weight.grad.numpy(), scaled / 16)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) has already been called on this optimizer since the last "
                                           r"update\(\)\."):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="Closure use is not currently supported if GradScaler is enabled."):
        scaler.step(opt, closure=lambda: None)
    scaler.step(opt)
    with pytest.raises(RuntimeError, match=r"unscale_\(\) is being called after step\(\)\."):
        scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match=r"step\(\) has already been called since the last update\(\)\."):
        scaler.step(opt)
    with pytest.raises(AssertionError, match="A GradScaler instance may only be pickled"):
        pickle.dumps(scaler)
    scaler.update()
    with pytest.raises(AssertionError, match="No inf checks were recorded prior to update."):
        scaler.update()


def test_float16_gradients_are_refused():
    w = t(2, dtype=F16, requires_grad=True)
    opt = ag.optim.SGD([w], lr=0.1)
    scaler = ag.amp.GradScaler("cpu")
    scaler.scale((w * w).sum()).backward()
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients."):
        scaler.step(opt)


def test_update_to_a_given_scale():
    scaler = ag.amp.GradScaler("cpu", init_scale=4.0)
    scaler.scale(single(1))
    scaler.update(2.0)
    assert scaler.get_scale() == 2.0
    scaler.update(ag.tensor([5.0]))
    assert scaler.get_scale() == 5.0
    with pytest.raises(AssertionError, match="new_scale should be a float or a 1-element"):
        scaler.update(ag.tensor([5.0, 6.0]))


def test_state_dict_round_trip_and_pickle():
    scaler = ag.amp.GradScaler("cpu", init_scale=32.0, growth_factor=4.0, backoff_factor=0.125, growth_interval=7)
    assert scaler.state_dict() == {"scale": 32.0, "growth_factor": 4.0, "backoff_factor": 0.125,
                                   "growth_interval": 7, "_growth_tracker": 0}
    x, y = single(4, 3), single(4, 2)
    model, opt = model_and_optimizer(lr=1e-3)
    backward_scaled(scaler, model, x, y)
    scaler.step(opt)
    scaler.update()
    state = scaler.state_dict()
    assert state["_growth_tracker"] == 1
    other = ag.amp.GradScaler("cpu")
    other.scale(single(1))  # its scale tensor exists already: load fills it
    other.load_state_dict(state)
    assert other.state_dict() == state
    assert pickle.loads(pickle.dumps(scaler)).state_dict() == state
    scaler.set_growth_factor(8.0)
    scaler.set_backoff_factor(0.5)
    scaler.set_growth_interval(9)
    assert (scaler.get_growth_factor(), scaler.get_backoff_factor(), scaler.get_growth_interval()) == (8.0, 0.5, 9)
    with pytest.raises(RuntimeError, match="The source state dict is empty"):
        other.load_state_dict({})
    with pytest.raises(AssertionError, match="The growth factor must be > 1.0."):
        ag.amp.GradScaler("cpu", growth_factor=1.0)
    with pytest.raises(AssertionError, match="The backoff factor must be < 1.0."):
        ag.amp.GradScaler("cpu", backoff_factor=1.0)


def test_a_disabled_scaler_passes_everything_through():
    x, y = single(4, 3), single(4, 2)
    model, opt = model_and_optimizer()
    scaler = ag.amp.GradScaler("cpu", enabled=False)
    loss = F.mse_loss(model(x), y)
    assert scaler.scale(loss) is loss and not scaler.is_enabled()
    loss.backward()
    before = model.weight.detach().clone()
    scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    assert not np.array_equal(model.weight.detach().numpy(), before.numpy())
    assert scaler.get_scale() == 1.0 and scaler.state_dict() == {}
    scaler.load_state_dict({})


def test_deprecated_cuda_names_warn():
    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.GradScaler\(args...\)` is deprecated. Please use "
                                           r"`torch.amp.GradScaler\('cuda', args...\)` instead."):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # CUDA may be missing: the scaler then disables itself
            scaler = ag.cuda.amp.GradScaler()
    assert isinstance(scaler, ag.amp.GradScaler)
    from actorgrad.cuda.amp import autocast

    with pytest.warns(FutureWarning, match=r"`torch.cuda.amp.autocast\(args...\)` is deprecated"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            assert autocast(enabled=False).device == "cuda"


def test_backends_flags_are_kept_and_tf32_is_the_matmul_precision():
    cudnn = ag.backends.cudnn
    assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (True, False, False, True)
    assert not cudnn.is_available() and cudnn.version() is None and not ag.backends.mps.is_available()
    assert ag.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    cudnn.benchmark = True
    try:
        import actorgrad.backends.cudnn as imported

        assert imported.benchmark is True
    finally:
        cudnn.benchmark = False
    matmul = ag.backends.cuda.matmul
    assert not matmul.allow_tf32 and ag.get_float32_matmul_precision() == "highest"
    matmul.allow_tf32 = True
    try:
        assert ag.get_float32_matmul_precision() == "high" and matmul.allow_tf32
    finally:
        matmul.allow_tf32 = False
    assert ag.get_float32_matmul_precision() == "highest"
    with pytest.raises(AttributeError, match="Unknown attribute foo"):
        matmul.foo = 1


# CUDA, through CuPy or its stand-in


@pytest.mark.gpu
def test_cuda_lists_and_a_scaled_training_step(cupy):
    def on(dtype):
        return lambda *shape: t(*shape, dtype=dtype).cuda()

    h, s = on(F16), on(F32)
    with ag.autocast("cuda"):
        assert ag.get_autocast_dtype("cuda") == F16
        for lower in (ag.matmul(s(3, 4), s(4, 2)), F.linear(s(3, 4), s(2, 4), s(2)), ag.mv(s(3, 4), s(4)),
                      ag.addmv(s(3), s(3, 4), s(4)), F.conv2d(s(1, 2, 4, 4), s(3, 2, 3, 3))):
            assert lower.dtype == F16 and lower.device.type == "cuda"
        for fp32 in (h(4).exp(), h(4).sum(), F.softmax(h(2, 3), 1), F.layer_norm(h(2, 3), (3,)), h(4) ** 2,
                     h(4).log(), h(4).cumsum(0), F.softplus(h(4)), F.mse_loss(h(4), h(4))):
            assert fp32.dtype == F32
        assert F.softmax(h(2, 3), 1, dtype=F16).dtype == F16  # an explicit dtype is respected
        assert ag.dot(h(3), s(3)).dtype == F32  # promote: plain dot refuses mixed dtypes
        assert ag.addcmul(h(3), h(3), h(3)).dtype == F16
        assert (s(4).relu()).dtype == F32 and (h(4).tanh()).dtype == F16  # unlisted
        with pytest.raises(RuntimeError, match="unsafe to autocast"):
            F.binary_cross_entropy(h(3) * 0.5, h(3) * 0.5)
        cpu_side = ag.matmul(single(2, 2), single(2, 2))
        assert cpu_side.dtype == F32  # a CUDA region leaves CPU ops alone
    model = ag.nn.Linear(3, 2).cuda()
    opt = ag.optim.SGD(model.parameters(), lr=0.1)
    scaler = ag.amp.GradScaler("cuda", init_scale=2.0**8, growth_interval=1)
    with ag.autocast("cuda"):
        loss = F.mse_loss(model(s(4, 3)), s(4, 2))
    scaler.scale(loss).backward()
    assert model.weight.grad.dtype == F32 and model.weight.grad.device.type == "cuda"
    before = model.weight.detach().cpu().numpy().copy()
    scaler.step(opt)
    scaler.update()
    assert scaler.get_scale() == 2.0**9
    assert not np.array_equal(model.weight.detach().cpu().numpy(), before)
