"""The PyTorch-parity additions on cuda:0: activations, pad modes, losses, pooling, nn modules, init, nn.utils,
optimizers and schedulers, number wrapping, arange, inference mode, saved values and batched gradients give the
cpu's values and dtypes, with every result and gradient (first and second order) on cuda:0.
Skipped when cupy or a CUDA device is missing."""

import warnings

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn as nn
import actorgrad.nn.functional as F
from actorgrad.nn import init
from actorgrad.nn.utils import clip_grad_norm_, clip_grad_value_, parameters_to_vector, vector_to_parameters
from actorgrad.optim import lr_scheduler as S

pytestmark = pytest.mark.gpu
cupy = pytest.importorskip("cupy")
if not cupy.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

CUDA = ag.device("cuda:0")
RNG = np.random.default_rng(7)
# The GPU's math library rounds transcendental functions differently from numpy's, in the last bits.
RTOL, ATOL = 1e-6, 1e-10


def any_(*shape):
    return RNG.uniform(-1.5, 1.5, shape)


def unit(*shape):
    return RNG.uniform(0.1, 0.9, shape)


def host(t):
    return t.detach().cpu().numpy()


def assert_same(got, want, label=""):
    """`got` (computed on cuda) matches `want` (on the cpu), item for item: tensors on cuda:0 with the cpu's
    dtype and values, anything else equal."""
    if isinstance(want, list | tuple):
        assert len(got) == len(want), label
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{label}[{i}]")
    elif isinstance(want, ag.Tensor):
        assert got.device is CUDA, f"{label}: on {got.device}"
        assert got.dtype == want.dtype, f"{label}: {got.dtype} != {want.dtype}"
        np.testing.assert_allclose(host(got), host(want), rtol=RTOL, atol=ATOL, err_msg=label)
    else:
        assert got == want, label


def on_both(run):
    """`run(device)` on the cpu and on cuda:0, compared."""
    assert_same(run("cuda:0"), run("cpu"))


BCE_WEIGHT, SMALL = unit(4), any_(3, 4)
# label, function of the float64 leaves and the device, leaf arrays
GRAD_CASES = [
    ("elu selu celu", lambda x, d: F.elu(x) + F.elu(x, 0.5) + F.selu(x) + F.celu(x, 0.7), [any_(3, 4)]),
    ("hardtanh relu6 hardsigmoid hardswish", lambda x, d: F.hardtanh(x, -0.5, 0.5) + F.relu6(x * 5)
     + F.hardsigmoid(x * 4) + F.hardswish(x * 4), [any_(3, 4)]),
    ("mish logsigmoid softsign tanhshrink threshold", lambda x, d: F.mish(x) + F.logsigmoid(x) + F.softsign(x)
     + F.tanhshrink(x) + F.threshold(x, 0.1, 20.0), [any_(3, 4)]),
    ("glu", lambda x, d: F.glu(x, 1) + F.glu(x, 0).sum(), [any_(4, 4)]),
    ("prelu per channel and shared", lambda x, w, v, d: F.prelu(x, w) + F.prelu(x, v),
     [any_(2, 3, 4), unit(3), unit(1)]),
    ("softmin, softmax without dim and with dtype", lambda x, d: F.softmin(x, 1) * x + F.softmax(x) * x
     + F.softmax(x, 0, dtype=ag.float32).double() + F.log_softmax(x), [any_(3, 4)]),
    ("in-place activations", lambda x, d: F.relu(x * 1, inplace=True) * x + F.leaky_relu(x * 1, 0.2, inplace=True)
     * x + F.silu(x * 1, inplace=True) * x + F.elu(x * 1, inplace=True) + F.hardtanh(x * 1, inplace=True)
     + F.hardsigmoid(x * 1, inplace=True) + F.hardswish(x * 1, inplace=True) + F.mish(x * 1, inplace=True)
     + F.threshold(x * 1, 0.1, 2.0, inplace=True), [any_(3, 4)]),
    ("pad reflect replicate circular", lambda x, d: F.pad(x, (1, 2, 2, 1), mode="reflect") ** 2
     + F.pad(x, (1, 2, 2, 1), mode="replicate") ** 2 + F.pad(x, (1, 2, 2, 1), mode="circular") ** 2,
     [any_(2, 3, 4)]),
    ("pad of a 0-d tensor", lambda x, d: F.pad(x * x, ()) * x, [np.array(0.7)]),
    ("binary_cross_entropy", lambda x, t, d: F.binary_cross_entropy(x, t)
     + F.binary_cross_entropy(x, t, reduction="none").sum()
     + F.binary_cross_entropy(x, t, weight=ag.tensor(BCE_WEIGHT, device=d)), [unit(3, 4), unit(3, 4)]),
    ("smooth_l1 huber", lambda x, t, d: F.smooth_l1_loss(x, t, beta=0.5) + F.smooth_l1_loss(x, t, reduction="none")
     .sum() + F.smooth_l1_loss(x, t[0], beta=0.0) + F.huber_loss(x, t, delta=0.5)
     + F.huber_loss(x, t, reduction="sum"), [any_(3, 4), any_(3, 4)]),
    ("kl_div", lambda x, t, d: F.kl_div(x, t, reduction="batchmean") + F.kl_div(x, t.log(), reduction="sum",
     log_target=True) + F.kl_div(x, t, reduction="none").sum(), [any_(3, 4), unit(3, 4)]),
    ("weighted and legacy mse l1", lambda x, t, w, d: F.mse_loss(x, t, weight=w) + F.l1_loss(x, t, weight=w,
     reduction="sum") + F.mse_loss(x, t, size_average=False) + F.l1_loss(x, t, reduce=False).sum(),
     [any_(3, 4), any_(3, 4), unit(3, 4)]),
    ("group_norm normalize", lambda x, w, b, d: (F.group_norm(x, 2, w, b) ** 2).sum() + F.group_norm(x, 4).sum()
     + F.normalize(x) + F.normalize(x, p=1, dim=0) + F.normalize(x, p=3.0, dim=2),
     [any_(2, 4, 3), unit(4), any_(4)]),
    ("max_pool2d with padding and length-1 tuples", lambda x, d: F.max_pool2d(x, 2, 1, padding=1).sum()
     + F.max_pool2d(x, (2,), (1,), (1,), (1,)).sum() + F.max_pool2d(x, 3, 2, 1, ceil_mode=True).sum(),
     [any_(1, 2, 4, 4)]),
    ("avg_pool2d and conv2d with length-1 tuples", lambda x, w, d: F.avg_pool2d(x, (2,), (1,), (1,)).sum()
     + F.avg_pool2d(x, 3, 1, 1, count_include_pad=False, divisor_override=2).sum()
     + F.conv2d(x, w, None, (1,), (1,), (1,)).sum() + F.conv2d(x, w, padding="same").sum()
     + F.conv1d(x[:, :, 0], w[:, :, 0], None, (2,), (1,), (1,)).sum(), [any_(1, 2, 4, 4), any_(3, 2, 3, 3)]),
    ("linear with a 1-d weight", lambda x, w, d: F.linear(x, w).sum() + F.linear(w, w), [any_(3, 4), any_(4)]),
]


@pytest.mark.parametrize("label, fn, arrays", GRAD_CASES, ids=[c[0] for c in GRAD_CASES])
def test_an_addition_on_cuda_gives_the_cpus_values_and_gradients_on_cuda(label, fn, arrays):
    def run(where):
        leaves = [ag.tensor(a, dtype=ag.float64, device=where, requires_grad=True) for a in arrays]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # softmax's implicit dim, smooth_l1's broadcast
            out = fn(*leaves, where)
        firsts = ag.autograd.grad(out.sum(), leaves, create_graph=True, allow_unused=True)
        used = [(g, leaf) for g, leaf in zip(firsts, leaves) if g is not None and g.requires_grad]
        seconds = ag.autograd.grad(sum((g * g).sum() for g, _ in used), [leaf for _, leaf in used],
                                   allow_unused=True) if used else ()
        return [out, [g for g in firsts if g is not None], [g for g in seconds if g is not None]]

    assert_same(run("cuda:0"), run("cpu"), label)


def _int(d, values, dtype=ag.int64):
    return ag.tensor(values, dtype=dtype, device=d)


VALUE_CASES = {
    "integer hardtanh relu6 threshold": lambda d: [
        F.hardtanh(_int(d, [[-3, 0, 2]]), -1, 1), F.hardtanh(_int(d, [-3, 0, 2], ag.int8), -1.5, 1.5),
        F.relu6(_int(d, [-3, 0, 9], ag.int32)), F.threshold(_int(d, [-3, 0, 9], ag.int32), 1, 7),
        F.threshold(_int(d, [-3, 0, 9], ag.int32), 1, 7, inplace=True)],
    "integer softsign tanhshrink": lambda d: [F.softsign(_int(d, [1, -2])), F.tanhshrink(_int(d, [1, -2]))],
    "one_hot": lambda d: [F.one_hot(_int(d, [0, 3, 1])), F.one_hot(_int(d, [[0, 3], [1, 1]]), 5),
                          F.one_hot(_int(d, np.zeros(0, np.int64)), 3)],
    "float32 activations": lambda d: [f(ag.tensor(SMALL, dtype=ag.float32, device=d))
                                      for f in (F.elu, F.selu, F.mish, F.logsigmoid, F.hardswish, F.glu)],
    "integer and -inf pooling": lambda d: [
        F.max_pool2d(_int(d, np.arange(16).reshape(1, 1, 4, 4)), 2),
        F.avg_pool2d(_int(d, np.arange(16).reshape(1, 1, 4, 4)), 3, 1, 1),
        F.avg_pool2d(_int(d, np.arange(16).reshape(1, 1, 4, 4)), 3, 1, 1, divisor_override=2),
        *F.max_pool2d(ag.tensor(np.full((1, 1, 3, 3), -np.inf), device=d), 2, 1, 1, return_indices=True),
        *F.max_pool2d(ag.tensor([[[[1.0, np.nan, 2.0], [np.nan, 0.0, 3.0]]]], device=d), 2, 1, 1,
                      return_indices=True)],
    "integer pad modes": lambda d: [F.pad(_int(d, [[1, 2, 3]]), (1, 1), mode="reflect"),
                                    F.pad(_int(d, [[1, 2]], ag.int8), (1, 1), value=-100)],
    "dropout, in place too": lambda d: [(ag.manual_seed(0), F.dropout(ag.ones(3, 4, device=d), 0.5))[1],
                                        (ag.manual_seed(0), F.dropout(ag.ones(3, 4, device=d), 0.5, inplace=True))[1],
                                        F.dropout(ag.ones(3, 4, device=d), 1.0)],
    "out-of-range numbers wrap": lambda d: [
        _int(d, [1, 2, -3], ag.int8) + 1000, _int(d, [1, 2, 3], ag.uint8) * 300, _int(d, [1, 2], ag.int16) - 2 ** 40,
        _int(d, [1, 2, 3], ag.int8) == 257, _int(d, [1, 2]) + (2 ** 64 - 1), _int(d, [1, 2], ag.int8) // 1000,
        ag.full((2,), -3, dtype=ag.uint8, device=d), ag.full_like(_int(d, [1, 2], ag.int8), -100),
        ag.where(_int(d, [True, False], ag.bool), _int(d, [1, 2], ag.int8), 3)],
    "arange": lambda d: [
        ag.arange(5, device=d), ag.arange(1, 4, step=0.5, device=d), ag.arange(0, 1, 0.1, device=d),
        ag.arange(10, 0, -3, device=d), ag.arange(2 ** 53, 2 ** 53 + 3, device=d), ag.arange(1.5, device=d),
        ag.arange(0, 300, dtype=ag.uint8, device=d), ag.arange(ag.tensor(3), device=d),
        ag.arange(ag.tensor(4, device=d), device=d), ag.arange(0, 5, dtype=ag.float32, device=d)],
}


@pytest.mark.parametrize("run", VALUE_CASES.values(), ids=VALUE_CASES)
def test_a_forward_addition_on_cuda_gives_the_cpus_values_and_dtypes(run):
    on_both(run)


# -- modules -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("training", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("track", [True, False], ids=["tracked", "untracked"])
@pytest.mark.parametrize("make, shape", [(nn.BatchNorm1d, (5, 4)), (nn.BatchNorm1d, (5, 4, 3)),
                                         (nn.BatchNorm2d, (2, 4, 3, 3))], ids=["1d", "1d-length", "2d"])
def test_batch_norm_modules_on_cuda_update_their_buffers_there(make, shape, training, track):
    x, scale = RNG.normal(size=shape), unit(4)

    def run(d):
        m = make(4, momentum=None, track_running_stats=track, device=d, dtype=ag.float64).train(training)
        with ag.no_grad():
            m.weight.mul_(ag.tensor(scale, device=d)), m.bias.add_(0.5)
        leaf = ag.tensor(x, device=d, requires_grad=True)
        y = m(leaf) + m(leaf * 2)
        return [y, *ag.autograd.grad((y * y).sum(), [leaf, m.weight, m.bias]), *m.buffers()]

    on_both(run)


def test_loss_activation_pooling_and_container_modules_on_cuda():
    x, y, labels = any_(3, 4), any_(3, 4), np.array([0, 2, 3])

    def run(d):
        ag.manual_seed(1)
        a, b = ag.tensor(x, device=d, requires_grad=True), ag.tensor(y, device=d)
        t = ag.tensor(labels, device=d)
        losses = [nn.MSELoss()(a, b), nn.L1Loss(reduction="sum")(a, b), nn.SmoothL1Loss(beta=0.5)(a, b),
                  nn.HuberLoss(delta=0.3)(a, b), nn.KLDivLoss(reduction="batchmean")(a.log_softmax(1), b.softmax(1)),
                  nn.BCELoss(weight=ag.tensor(unit_weight, device=d))(a.sigmoid(), b.sigmoid()),
                  nn.BCEWithLogitsLoss(pos_weight=ag.tensor(unit_weight, device=d))(a, b.sigmoid()),
                  nn.CrossEntropyLoss(label_smoothing=0.1)(a, t), nn.NLLLoss()(a.log_softmax(1), t)]
        activations = [nn.ELU(), nn.SELU(), nn.CELU(0.5), nn.Hardtanh(-0.5, 0.5), nn.ReLU6(), nn.Hardsigmoid(),
                       nn.Hardswish(), nn.Mish(), nn.LogSigmoid(), nn.Softsign(), nn.Tanhshrink(),
                       nn.Threshold(0.1, 2.0), nn.GLU(0), nn.Softmin(1), nn.Softmax(1), nn.LogSoftmax(1),
                       nn.LeakyReLU(0.2), nn.SiLU(), nn.Softplus(2.0), nn.Sigmoid(), nn.Identity(), nn.Flatten(0),
                       nn.Unflatten(1, (2, 2))]
        outs = [m(a[:2] if isinstance(m, nn.GLU) else a) for m in activations]
        image = a.reshape(1, 1, 3, 4)
        outs += [nn.MaxPool2d(2, 1, 1)(image), nn.AvgPool2d(2, 1, 1, count_include_pad=False)(image)]
        model = nn.Sequential(nn.Linear(4, 3), nn.PReLU(3), nn.ModuleList([nn.Linear(3, 2)])[0]).double()
        extra = nn.ParameterDict({"scale": nn.Parameter(ag.ones(1, dtype=ag.float64) * 2)})
        holder = nn.Module()
        holder.model, holder.extra = model, extra
        holder.to(d)
        outs.append(model(a) * extra["scale"])
        total = sum(losses) + sum(o.sum() for o in outs)
        return [losses, outs, ag.autograd.grad(total, [a, *holder.parameters()])]

    unit_weight = unit(4)
    on_both(run)


def test_module_to_half_and_type_forms_on_cuda():
    def run(d):
        ag.manual_seed(0)
        m = nn.Linear(3, 2)
        seen = []
        for cast in (lambda: m.to(d), lambda: m.to(ag.float64), lambda: m.to(d, ag.float32),
                     lambda: m.to(ag.zeros(1, dtype=ag.float64, device=d)), lambda: m.to(device=d, dtype=ag.float16),
                     m.float, m.half, lambda: m.type(ag.float64)):
            cast()
            seen.append(m.weight * 1)
        return seen

    on_both(run)


@pytest.mark.parametrize("name, device, dtype", [
    ("actorgrad.cuda.DoubleTensor", CUDA, ag.float64), ("actorgrad.FloatTensor", ag.device("cpu"), ag.float32),
])
def test_module_type_with_a_legacy_name_moves_the_module_as_tensor_type_does(name, device, dtype):
    start = "cpu" if device is CUDA else "cuda"
    m = nn.Linear(3, 2).to(start)
    m.weight.grad = ag.ones(2, 3, device=start)
    assert m.type(name) is m
    assert m.weight.device is device and m.bias.device is device and m.weight.grad.device is device
    assert m.weight.dtype == dtype and m.weight.type() == ag.ones(1, device=start).type(name).type() == name
    with pytest.raises(ValueError, match=r"^invalid type: 'actorgrad\.Double'$"):
        m.type("actorgrad.Double")


# -- init, nn.utils ----------------------------------------------------------------------------------------------

INITS = {
    "uniform_": lambda w: init.uniform_(w, -1, 2), "normal_": lambda w: init.normal_(w, 1, 2),
    "trunc_normal_": lambda w: init.trunc_normal_(w, 0.5, 1.0, -1, 1.5), "constant_": lambda w: init.constant_(w, 0.3),
    "zeros_ ones_": lambda w: init.ones_(init.zeros_(w)), "eye_": init.eye_,
    "orthogonal_": lambda w: init.orthogonal_(w, 2.0), "kaiming_uniform_": lambda w: init.kaiming_uniform_(w, a=0.1),
    "kaiming_normal_": lambda w: init.kaiming_normal_(w, mode="fan_out", nonlinearity="leaky_relu"),
    "xavier_uniform_": lambda w: init.xavier_uniform_(w, 1.5), "xavier_normal_": lambda w: init.xavier_normal_(w, 1.5),
}


@pytest.mark.parametrize("dtype", [ag.float64, ag.float32])
@pytest.mark.parametrize("fill", INITS.values(), ids=INITS)
def test_init_functions_fill_a_cuda_tensor_in_place_with_the_cpus_draws(fill, dtype):
    def run(d):
        ag.manual_seed(3)
        w = ag.empty(4, 6, dtype=dtype, device=d, requires_grad=True)
        data = w._data
        assert fill(w) is w and w._data is data and w.grad_fn is None
        return [w]

    on_both(run)


def _params_with_grads(d):
    params = [ag.tensor(a, device=d, requires_grad=True) for a in (any_(3, 4) * 0 + SMALL, SMALL[0] * 3)]
    for p in params:
        p.grad = p.detach() * 2
    return params


UTILS = {
    **{f"clip_grad_norm_ {n}": lambda d, n=n: (lambda ps: [clip_grad_norm_(ps, 1.0, n), [p.grad for p in ps]])(
        _params_with_grads(d)) for n in (2.0, 1.0, 3.0, float("inf"))},
    "clip_grad_value_": lambda d: (lambda ps: (clip_grad_value_(ps, 0.7), [p.grad for p in ps])[1])(
        _params_with_grads(d)),
    "parameters_to_vector": lambda d: parameters_to_vector(_params_with_grads(d)),
    "vector_to_parameters": lambda d: (lambda ps: (
        vector_to_parameters(ag.arange(16, dtype=ag.float64, device=d), ps), ps)[1])(_params_with_grads(d)),
}


@pytest.mark.parametrize("run", UTILS.values(), ids=UTILS)
def test_nn_utils_on_cuda_parameters(run):
    on_both(run)


# -- optimizers and schedulers -----------------------------------------------------------------------------------

SCHEDULERS = {
    "none": None, "StepLR": lambda o: S.StepLR(o, 2, 0.5), "MultiStepLR": lambda o: S.MultiStepLR(o, [1, 3], 0.5),
    "ExponentialLR": lambda o: S.ExponentialLR(o, 0.9), "CosineAnnealingLR": lambda o: S.CosineAnnealingLR(o, 3, 1e-3),
    "LambdaLR": lambda o: S.LambdaLR(o, lambda e: 0.9 ** e), "LinearLR": lambda o: S.LinearLR(o, 0.5, 1.0, 3),
    "ReduceLROnPlateau": lambda o: S.ReduceLROnPlateau(o, patience=0),
}
OPTIMIZERS = {
    "adam tensor lr": lambda ps: ag.optim.Adam(ps, lr=ag.tensor(0.05)),
    "adam tensor betas amsgrad": lambda ps: ag.optim.Adam(ps, lr=0.05, betas=(ag.tensor(0.8), ag.tensor(0.9)),
                                                          amsgrad=True, weight_decay=0.1),
    "adamw": lambda ps: ag.optim.AdamW(ps, lr=0.05, maximize=True),
    "sgd tensor lr": lambda ps: ag.optim.SGD(ps, lr=ag.tensor(0.1), momentum=0.9),
}


@pytest.mark.parametrize("make_scheduler", SCHEDULERS.values(), ids=SCHEDULERS)
@pytest.mark.parametrize("make_optimizer", OPTIMIZERS.values(), ids=OPTIMIZERS)
def test_optimizers_and_schedulers_step_cuda_parameters_as_cpu_ones(make_optimizer, make_scheduler):
    def run(d):
        ps = [ag.tensor(a, device=d, requires_grad=True) for a in (SMALL, SMALL[0])]
        opt = make_optimizer(ps)
        scheduler = make_scheduler(opt) if make_scheduler else None
        lrs = []
        for _ in range(4):
            opt.zero_grad()
            ((ps[0] * ps[1]).tanh() ** 2).sum().backward()
            opt.step()
            if isinstance(scheduler, S.ReduceLROnPlateau):
                scheduler.step(ag.tensor(1.0, device=d))
            elif scheduler is not None:
                scheduler.step()
            lrs.append(float(opt.param_groups[0]["lr"]))
        # the step count and a tensor lr are cpu tensors, as PyTorch keeps them: their values only
        state = [v.to("cuda:0") if k == "step" else v for p in ps for k, v in sorted(opt.state[p].items())]
        return [ps, state, lrs]

    on_both(run)


# -- autograd additions ------------------------------------------------------------------------------------------

def test_inference_mode_on_cuda():
    def run(d):
        with ag.inference_mode():
            x = ag.tensor(SMALL, device=d, requires_grad=True) * 2
            made = [ag.zeros(2, device=d), ag.arange(3, device=d), ag.full((2,), 3, device=d)]
        refused = []
        for act in (lambda: x.add_(1), lambda: (x * ag.tensor(SMALL, device=d, requires_grad=True)).sum().backward()):
            with pytest.raises(RuntimeError) as error:
                act()
            refused.append(str(error.value))
        return [x, *made, [t.is_inference() for t in (x, *made)], x.requires_grad, refused]

    on_both(run)


def _saved_values(node):
    values = []
    for name in dir(node):
        if name.startswith("_saved_"):
            try:
                values.append(getattr(node, name))
            except AttributeError:  # a value some other rule saves
                pass
    return values


@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides")
def test_saved_values_of_cuda_nodes_are_cuda_tensors():
    def run(d):
        x, w = (ag.tensor(a, device=d, requires_grad=True) for a in (SMALL, SMALL.T.copy()))
        outputs = [x * w.T, x.pow(3), x.exp(), F.elu(x), F.leaky_relu(x * 1, 0.2, inplace=True), F.gelu(x),
                   F.prelu(x, w[0, :1].abs()), F.glu(x), F.softmax(x, 1), F.group_norm(x.reshape(1, 4, 3), 2),
                   F.normalize(x),
                   F.smooth_l1_loss(x, w.T), F.kl_div(x, w.T.abs()), F.binary_cross_entropy(x.sigmoid(), w.T.sigmoid()),
                   x[ag.tensor([0, 2], device=d)], F.max_pool2d(x[None, None], 2), F.pad(x, (1, 1), mode="reflect")]
        saved = [_saved_values(y.grad_fn) for y in outputs]
        assert all(saved)
        for value in (v for values in saved for v in values):  # an index's arrays are tensors, as PyTorch's
            assert not any(isinstance(item, np.ndarray | cupy.ndarray) for item in
                           (value if isinstance(value, tuple) else (value,))), "a raw array saved"
        return saved

    on_both(run)


def test_batched_gradients_on_cuda():
    def run(d):
        x = ag.tensor(SMALL[0], device=d, requires_grad=True)
        y = x.sin() * x
        eye = ag.eye(4, dtype=ag.float64, device=d)
        (g,) = ag.autograd.grad(y, x, eye, is_grads_batched=True, retain_graph=True)
        (h,) = ag.autograd.grad(y, x, eye, is_grads_batched=True, create_graph=True)
        return [g, h, *ag.autograd.grad(h.sum(), x)]

    on_both(run)


STANDIN = hasattr(cupy, "_API")  # tests/cupy_standin, whose array class a test may patch


@pytest.mark.skipif(not STANDIN, reason="counts host syncs through the CuPy stand-in's conversions")
@pytest.mark.parametrize("padding", [0, 1])
def test_max_pool2d_on_cuda_asks_the_host_nothing(monkeypatch, padding):
    """Whether a NaN came or an index is past the plane is no question to the GPU (each one a sync)."""
    x = ag.tensor(any_(2, 3, 5, 5), device="cuda", requires_grad=True)

    def refuse(self, *args):
        raise AssertionError("a host sync")

    for name in ("__bool__", "__int__", "__float__"):
        monkeypatch.setattr(cupy.ndarray, name, refuse)
    out, index = F.max_pool2d(x, 3, 2, padding, ceil_mode=True, return_indices=True)
    monkeypatch.undo()
    want, want_index = F.max_pool2d(x.cpu(), 3, 2, padding, ceil_mode=True, return_indices=True)
    assert_same([out, index], [want, want_index])


def test_a_write_through_a_diagonal_on_cuda_reaches_its_base_with_the_cpus_gradient():
    results = []
    for where in ("cpu", CUDA):
        x = ag.arange(9.0, dtype=ag.float64).reshape(3, 3).to(where).requires_grad_()
        z = x * 1
        z.diagonal().mul_(3)
        (z * z).sum().backward()
        assert z.device == x.grad.device == ag.device(where)
        results.append((z.detach().cpu().numpy(), x.grad.cpu().numpy()))
    for cpu_value, cuda_value in zip(*results):
        np.testing.assert_allclose(cuda_value, cpu_value, rtol=1e-12)
