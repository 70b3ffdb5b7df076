"""RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam and the remaining lr schedulers, against PyTorch 2.13.

The optimizers' reference values were computed offline with torch 2.13 on the CPU: 8 float64 steps on the quadratic
below, its gradient made in numpy and handed to both. Torch ran with ATEN_CPU_CAPABILITY=default, its unfused
kernels (its AVX2 and AVX-512 kernels fuse multiply-adds in lerp_, addcmul_ and add_(alpha=), which moves results by
about 1e-15); even those round a few square roots (MKL's) one ulp off numpy's correctly rounded ones, so the values
must agree to 2 ulps. The schedules are plain Python floats and match PyTorch's bit for bit.
"""

import math
import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad import nn, optim
from actorgrad.optim import lr_scheduler as L

CURVATURE = np.array([[0.5, 2.0, 1.0], [3.0, 0.2, 1.5]])
TARGET = np.array([[1.0, -2.0, 0.5], [0.0, 3.0, -1.0]])
START = np.array([[0.3, 0.1, -0.4], [2.0, -1.0, 0.7]])
STEPS = 8
OPTIONS = {
    "RMSprop": [
        dict(lr=0.01), dict(lr=0.01, alpha=0.9, momentum=0.5), dict(lr=0.02, centered=True, weight_decay=0.1),
        dict(lr=0.01, centered=True, momentum=0.9, maximize=True), dict(lr=0.05, alpha=0.3, centered=True, eps=1e-3),
    ],
    "Adagrad": [
        dict(lr=0.1), dict(lr=0.1, lr_decay=0.05, weight_decay=0.1, initial_accumulator_value=0.5),
        dict(lr=0.1, eps=1e-3, maximize=True),
    ],
    "Adadelta": [dict(), dict(lr=0.5, rho=0.8, eps=1e-3, weight_decay=0.1), dict(rho=0.3, maximize=True)],
    "Adamax": [
        dict(lr=0.05), dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1),
        dict(betas=(0.3, 0.99), eps=1e-3, maximize=True),
    ],
    "NAdam": [
        dict(lr=0.05), dict(lr=0.05, momentum_decay=0.1, weight_decay=0.1),
        dict(weight_decay=0.2, decoupled_weight_decay=True, maximize=True), dict(lr=0.05, betas=(0.4, 0.9)),
    ],
    # RAdam's rectified step starts at step 6 with these betas.
    "RAdam": [
        dict(lr=0.05), dict(lr=0.05, betas=(0.8, 0.9), weight_decay=0.1),
        dict(weight_decay=0.2, decoupled_weight_decay=True, maximize=True), dict(lr=0.05, betas=(0.3, 0.99)),
    ],
}
# The parameter (flattened) after STEPS steps of torch.optim.<name>(**OPTIONS[name][case]).
TORCH_PARAMS = {
    ("RMSprop", 0): [
        0.6777936942943638, -0.32163364770055547, -0.006614300669754762,
        1.5793518895565384, -0.569291080739217, 0.2830546501514682,
    ],
    ("RMSprop", 1): [
        0.5509759127373617, -0.16293509343053525, -0.14483535784322732,
        1.7373422569723487, -0.7344824418477768, 0.43837939754642224,
    ],
    ("RMSprop", 2): [
        0.8069991570361731, -0.7104409130837916, 0.26440179078055454,
        1.1897908683238856, -0.15843384981714242, -0.08810239994719657,
    ],
    ("RMSprop", 3): [
        -1.8151941819538755, 2.0498184783260496, -2.4698707569563902,
        3.9552442258431695, -2.8936371165200137, 2.6746216428054694,
    ],
    ("RMSprop", 4): [
        1.0010464961794237, -1.6271426931987192, 0.4940211111439526,
        0.3272703612972142, 1.5170481098369906, -0.7952848209640707,
    ],
    ("Adagrad", 0): [
        0.6752873224222649, -0.3187276913463096, -0.009289113065961484,
        1.5822515391435972, -0.5722488125387024, 0.2859294149501255,
    ],
    ("Adagrad", 1): [
        0.5007591923366165, -0.271300075542779, -0.08560363781068951,
        1.6274116527558469, -0.6637782654075175, 0.33597025918086804,
    ],
    ("Adagrad", 2): [
        -0.17947793044634122, 0.553348637423428, -0.8717787345264576,
        2.4541288169137383, -1.445598525512873, 1.1568405659612508,
    ],
    ("Adadelta", 0): [
        0.32645724434784784, 0.07334629103783147, -0.37347662618099026,
        1.9733511640338761, -0.9733001870451533, 0.6733692582574623,
    ],
    ("Adadelta", 1): [
        0.5598494365567385, -0.20466210240730826, -0.11476477639204061,
        1.6953450077808054, -0.6918389603987307, 0.39847369750516926,
    ],
    ("Adadelta", 2): [
        0.2844282784810057, 0.11554933918312671, -0.41556437838364224,
        2.015549906560208, -1.015543914859602, 0.7155520028209706,
    ],
    ("Adamax", 0): [
        0.6480169546551369, -0.2829315715195797, -0.0406393370766401,
        1.6179739769518218, -0.6083802316880884, 0.3213149846651278,
    ],
    ("Adamax", 1): [
        0.740781533337211, -0.3154417208993684, 0.048691130899366615,
        1.5845145783364933, -0.5902793742318072, 0.28025384938236125,
    ],
    ("Adamax", 2): [
        0.2840600990684226, 0.11599114736093222, -0.4159706677759275,
        2.0159920339828914, -1.0159774048408916, 0.7159875154721046,
    ],
    ("NAdam", 0): [
        0.593739611534808, -0.21232724608204614, -0.09972030682838934,
        1.6881000387639673, -0.683706503253221, 0.38969993983464135,
    ],
    ("NAdam", 1): [
        0.5834226949895309, -0.21090861006409453, -0.10170009117056182,
        1.689112365688942, -0.6862136751778544, 0.39108766007475354,
    ],
    ("NAdam", 2): [
        0.28620058046938984, 0.11249339265012087, -0.4115486429697422,
        2.0064162578384446, -1.0096101919019942, 0.7105766061482188,
    ],
    ("NAdam", 3): [
        0.6562942593374966, -0.29102221387190097, -0.031344748138344924,
        1.6097596483130543, -0.6017667789523049, 0.3126954616174052,
    ],
    ("RAdam", 0): [
        0.3899557241058547, -0.8445799144713263, -0.18226220766519174,
        0.7269800020262653, -0.7973209430171986, 0.1083921225574825,
    ],
    ("RAdam", 1): [
        0.42526735312203034, -0.8727168830619764, -0.13256565055726235,
        0.6742854962619884, -0.7304125139568204, 0.05845610951938987,
    ],
    ("RAdam", 2): [
        0.2976736683751052, 0.12096192084549828, -0.4039577191309312,
        2.0269609962389046, -1.0024950595938773, 0.7117350190911538,
    ],
    ("RAdam", 3): [
        0.39837050076095304, -0.7943663985814065, -0.17989774896330055,
        0.8357313648670184, -0.788325866355258, 0.1273863447774158,
    ],
}

TORCH_DEFAULTS = {
    "RMSprop": {"lr": 0.01, "momentum": 0, "alpha": 0.99, "eps": 1e-08, "centered": False, "weight_decay": 0,
                "capturable": False, "foreach": None, "maximize": False, "differentiable": False},
    "Adagrad": {"lr": 0.01, "lr_decay": 0, "eps": 1e-10, "weight_decay": 0, "initial_accumulator_value": 0,
                "foreach": None, "maximize": False, "differentiable": False, "fused": None},
    "Adadelta": {"lr": 1.0, "rho": 0.9, "eps": 1e-06, "weight_decay": 0, "maximize": False, "capturable": False,
                 "foreach": None, "differentiable": False},
    "Adamax": {"lr": 0.002, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0, "foreach": None,
               "maximize": False, "differentiable": False, "capturable": False},
    "NAdam": {"lr": 0.002, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0, "momentum_decay": 0.004,
              "decoupled_weight_decay": False, "maximize": False, "foreach": None, "capturable": False,
              "differentiable": False},
    "RAdam": {"lr": 0.001, "betas": (0.9, 0.999), "eps": 1e-08, "weight_decay": 0, "maximize": False, "foreach": None,
              "capturable": False, "decoupled_weight_decay": False, "differentiable": False},
}
# Options that make every state tensor, and the state keys PyTorch keeps for them, in its order.
TORCH_STATE_KEYS = {
    "RMSprop": (dict(momentum=0.5, centered=True), ["step", "square_avg", "momentum_buffer", "grad_avg"]),
    "Adagrad": ({}, ["step", "sum"]),
    "Adadelta": ({}, ["step", "square_avg", "acc_delta"]),
    "Adamax": ({}, ["step", "exp_avg", "exp_inf"]),
    "NAdam": ({}, ["step", "mu_product", "exp_avg", "exp_avg_sq"]),
    "RAdam": ({}, ["step", "exp_avg", "exp_avg_sq"]),
}


def quadratic_grad(p: np.ndarray) -> np.ndarray:
    return CURVATURE * (p - TARGET)


def take_steps(opt, params, steps):
    for _ in range(steps):
        for p in params:
            p.grad = ag.tensor(quadratic_grad(p.detach().cpu().numpy()), device=p.device)
        opt.step()


def run(name, options, steps=STEPS, device=None):
    p = nn.Parameter(ag.tensor(START, dtype=ag.float64, device=device))
    opt = getattr(optim, name)([p], **options)
    take_steps(opt, [p], steps)
    return p, opt


@pytest.mark.parametrize(("name", "case"), list(TORCH_PARAMS))
def test_optimizer_matches_pytorch(name, case):
    p, _ = run(name, OPTIONS[name][case])
    np.testing.assert_array_max_ulp(p.detach().numpy().ravel(), np.array(TORCH_PARAMS[name, case]), maxulp=2)


@pytest.mark.parametrize("name", list(TORCH_DEFAULTS))
def test_defaults_and_state_keys_are_pytorchs(name):
    p = nn.Parameter(ag.tensor(START))
    assert list(getattr(optim, name)([p]).defaults.items()) == list(TORCH_DEFAULTS[name].items())
    options, keys = TORCH_STATE_KEYS[name]
    _, opt = run(name, options, steps=2)
    state = opt.state_dict()["state"][0]
    assert list(state) == keys
    for key, value in state.items():
        counter = key in ("step", "mu_product")
        assert value.dtype == (ag.float32 if counter else ag.float64) and value.shape == (() if counter else (2, 3))
    assert state["step"].item() == 2.0


@pytest.mark.parametrize("name", list(TORCH_DEFAULTS))
def test_state_dict_round_trip_continues_identically(name):
    options = {**OPTIONS[name][1], "maximize": True}
    p, opt = run(name, options, steps=3)
    saved = opt.state_dict()
    assert saved["param_groups"][0]["params"] == [0] and saved["param_groups"][0]["maximize"]
    clone = nn.Parameter(ag.tensor(p.detach().numpy()))
    clone_opt = getattr(optim, name)([clone], lr=0.5)
    clone_opt.load_state_dict(saved)
    assert {k: v for k, v in clone_opt.param_groups[0].items() if k != "params"} == {
        k: v for k, v in saved["param_groups"][0].items() if k != "params"}
    take_steps(opt, [p], 2)
    take_steps(clone_opt, [clone], 2)
    if name == "NAdam":
        # PyTorch loads mu_product in the parameter's dtype, so the loaded run keeps it in float64, not float32.
        assert clone_opt.state[clone]["mu_product"].dtype == ag.float64
        np.testing.assert_allclose(clone.detach().numpy(), p.detach().numpy(), rtol=1e-7)
    else:
        np.testing.assert_array_equal(clone.detach().numpy(), p.detach().numpy())
    assert saved["state"][0]["step"].item() == 3.0 and clone_opt.state[clone]["step"].item() == 5.0


def test_a_state_dict_from_an_older_version_loads_as_pytorchs_does():
    _, opt = run("NAdam", {}, steps=1)
    saved = opt.state_dict()
    del saved["param_groups"][0]["decoupled_weight_decay"]
    saved["state"][0]["step"] = 1
    saved["state"][0]["mu_product"] = 0.5
    opt.load_state_dict(saved)
    state = next(iter(opt.state.values()))
    assert opt.param_groups[0]["decoupled_weight_decay"] is False
    assert state["step"].dtype == state["mu_product"].dtype == ag.float32 and state["mu_product"].item() == 0.5


def test_param_groups_keep_their_own_options():
    a, b = (nn.Parameter(ag.tensor(START)) for _ in range(2))
    opt = optim.RMSprop([{"params": [a]}, {"params": b, "momentum": 0.5, "centered": True}], lr=0.02)
    take_steps(opt, [a, b], 4)
    np.testing.assert_array_equal(a.detach().numpy(), run("RMSprop", dict(lr=0.02), steps=4)[0].detach().numpy())
    alone, _ = run("RMSprop", dict(lr=0.02, momentum=0.5, centered=True), steps=4)
    np.testing.assert_array_equal(b.detach().numpy(), alone.detach().numpy())
    assert set(opt.state[b]) == {"step", "square_avg", "momentum_buffer", "grad_avg"}


def test_adagrad_makes_its_state_at_construction_from_the_constructors_accumulator():
    a, b, c = (nn.Parameter(ag.zeros(2, dtype=ag.float64)) for _ in range(3))
    opt = optim.Adagrad([{"params": [a]}, {"params": [b], "initial_accumulator_value": 2.0}],
                        initial_accumulator_value=0.5)
    assert [opt.state[p]["sum"].tolist() for p in (a, b)] == [[0.5, 0.5]] * 2  # the group's value is not used
    assert list(opt.state_dict()["state"]) == [0, 1] and opt.state[a]["step"].item() == 0.0
    opt.add_param_group({"params": [c], "initial_accumulator_value": 3.0})
    c.grad = ag.ones(2, dtype=ag.float64)
    opt.step()
    assert opt.state[c]["sum"].tolist() == [1.5, 1.5] and opt.state[a]["step"].item() == 0.0


@pytest.mark.parametrize("name", list(TORCH_DEFAULTS))
def test_float32_parameters_stay_float32_and_unused_ones_stay_put(name):
    p = nn.Parameter(ag.tensor(START.astype(np.float32)))
    idle = nn.Parameter(ag.ones(2))
    opt = getattr(optim, name)([p, idle], **TORCH_STATE_KEYS[name][0])
    p.grad = ag.tensor(quadratic_grad(START).astype(np.float32))
    opt.step()
    array = p._data
    opt.step()
    assert p._data is array and p.dtype == ag.float32 and not np.array_equal(p.detach().numpy(), START)
    assert all(v.dtype == ag.float32 for v in opt.state[p].values())
    assert idle.tolist() == [1.0, 1.0]


def test_zero_grad_closure_and_a_tensor_lr():
    p = nn.Parameter(ag.tensor([1.0, -2.0], dtype=ag.float64))
    opt = optim.Adamax([p], lr=ag.tensor(0.1))
    p.grad = ag.ones(2, dtype=ag.float64)
    opt.zero_grad()
    assert p.grad is None

    def closure():
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    assert opt.step(closure).item() == 5.0
    assert p.tolist() == pytest.approx([0.9, -1.9], abs=1e-8)  # Adamax's first step moves by lr (less eps)


@pytest.mark.parametrize(("make", "text"), [
    (lambda ps: optim.RMSprop(ps, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda ps: optim.RMSprop(ps, eps=-1), "Invalid epsilon value: -1"),
    (lambda ps: optim.RMSprop(ps, momentum=-0.5), "Invalid momentum value: -0.5"),
    (lambda ps: optim.RMSprop(ps, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda ps: optim.RMSprop(ps, alpha=-0.1), "Invalid alpha value: -0.1"),
    (lambda ps: optim.RMSprop(ps, lr=math.nan), "Invalid learning rate: nan"),
    (lambda ps: optim.Adagrad(ps, lr_decay=-1), "Invalid lr_decay value: -1"),
    (lambda ps: optim.Adagrad(ps, initial_accumulator_value=-1), "Invalid initial_accumulator_value value: -1"),
    (lambda ps: optim.Adagrad(ps, eps=-1), "Invalid epsilon value: -1"),
    (lambda ps: optim.Adadelta(ps, rho=1.5), "Invalid rho value: 1.5"),
    (lambda ps: optim.Adadelta(ps, weight_decay=-1), "Invalid weight_decay value: -1"),
    (lambda ps: optim.Adamax(ps, betas=(1.0, 0.9)), "Invalid beta parameter at index 0: 1.0"),
    (lambda ps: optim.Adamax(ps, betas=(0.9, -0.1)), "Invalid beta parameter at index 1: -0.1"),
    (lambda ps: optim.NAdam(ps, momentum_decay=-1), "Invalid momentum_decay value: -1"),
    (lambda ps: optim.NAdam(ps, betas=(0.9, 1.0)), "Invalid beta parameter at index 1: 1.0"),
    (lambda ps: optim.RAdam(ps, lr=-1.0), "Invalid learning rate: -1.0"),
    (lambda ps: optim.RAdam(ps, betas=(-0.1, 0.9)), "Invalid beta parameter at index 0: -0.1"),
    (lambda ps: optim.RAdam(ps, lr=ag.tensor([0.1, 0.2])), "Tensor lr must be 1-element"),
    # Options whose promise actorgrad cannot keep are refused, as for SGD and Adam.
    (lambda ps: optim.RMSprop(ps, capturable=True), "do not support capturable=True"),
    (lambda ps: optim.Adagrad(ps, fused=True), "do not support fused=True"),
    (lambda ps: optim.NAdam(ps, differentiable=True), "do not support differentiable=True"),
])
def test_bad_options_get_pytorchs_errors(make, text):
    with pytest.raises(ValueError, match=re.escape(text)):
        make([nn.Parameter(ag.ones(1))])


def test_optimizers_are_exported():
    assert {"RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam"} <= set(optim.__all__)

# -- schedulers ----------------------------------------------------------------------------------------------------
# Group 1's lr (starting at 0.05; group 0's at 0.1) and momentum (SGD's, starting at 0.5, or Adam's beta1) after each
# of 20 steps, from PyTorch 2.13.
TORCH_LRS = {
    "constant": [
        0.025, 0.025, 0.025, 0.025, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05, 0.05,
        0.05, 0.05, 0.05, 0.05, 0.05
    ],
    "polynomial": [
        0.05, 0.042013888888888885, 0.034722222222222224, 0.028124999999999994, 0.02222222222222222,
        0.01701388888888888, 0.012499999999999997, 0.008680555555555552, 0.005555555555555556,
        0.0031249999999999993, 0.001388888888888888, 0.0003472222222222225, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
        0.0, 0.0
    ],
    "warm_restarts": [
        0.05, 0.037750000000000006, 0.013250000000000005, 0.05, 0.046717622392718754, 0.037750000000000006,
        0.025500000000000002, 0.013250000000000005, 0.004282377607281252, 0.05, 0.04916518274408217,
        0.046717622392718754, 0.04282411613907042, 0.037750000000000006, 0.03184106660501176,
        0.025500000000000002, 0.019158933394988246, 0.013250000000000005, 0.008175883860929586,
        0.004282377607281252, 0.0018348172559178291
    ],
    "warm_restarts_t_mult_1": [
        0.05, 0.04267766952966369, 0.025, 0.0073223304703363135, 0.05, 0.04267766952966369, 0.025,
        0.0073223304703363135, 0.05, 0.04267766952966369, 0.025, 0.0073223304703363135, 0.05,
        0.04267766952966369, 0.025, 0.0073223304703363135, 0.05, 0.04267766952966369, 0.025,
        0.0073223304703363135, 0.05
    ],
    "one_cycle_cos": [
        0.020000000000000018, 0.06583592135001265, 0.18583592135001265, 0.3341640786499874, 0.45416407864998737,
        0.5, 0.49373200311754367, 0.47524231600673683, 0.445458088785525, 0.40587282697488153,
        0.3584715008956504, 0.30563101096814466, 0.250001, 0.19437098903185537, 0.14153049910434962,
        0.09412917302511849, 0.05454391121447502, 0.024759683993263143, 0.006269996882456277, 2e-06,
        0.006269996882456277
    ],
    "one_cycle_linear_three_phase": [
        0.05, 0.1625, 0.275, 0.3875, 0.5, 0.3875, 0.275, 0.16249999999999998, 0.04999999999999999, 0.045455,
        0.04091, 0.036365, 0.03182, 0.027275, 0.022730000000000004, 0.018185, 0.01364, 0.009094999999999999,
        0.0045499999999999985, 4.9999999999980616e-06, -0.004539999999999995
    ],
    "one_cycle_adam": [
        0.020000000000000018, 0.06583592135001265, 0.18583592135001265, 0.3341640786499874, 0.45416407864998737,
        0.5, 0.49373200311754367, 0.47524231600673683, 0.445458088785525, 0.40587282697488153,
        0.3584715008956504, 0.30563101096814466, 0.250001, 0.19437098903185537, 0.14153049910434962,
        0.09412917302511849, 0.05454391121447502, 0.024759683993263143, 0.006269996882456277, 2e-06,
        0.006269996882456277
    ],
    "cyclic_triangular": [
        0.01, 0.04, 0.07, 0.1, 0.082, 0.064, 0.046000000000000006, 0.028000000000000004, 0.01, 0.04, 0.07, 0.1,
        0.082, 0.064, 0.046000000000000006, 0.028000000000000004, 0.01, 0.04, 0.07, 0.1, 0.082
    ],
    "cyclic_triangular2": [
        0.02, 0.11000000000000001, 0.2, 0.11000000000000001, 0.02, 0.065, 0.11000000000000001, 0.065, 0.02,
        0.0425, 0.065, 0.0425, 0.02, 0.03125, 0.0425, 0.03125, 0.02, 0.025625000000000002, 0.03125,
        0.025625000000000002, 0.02
    ],
    "cyclic_exp_range_adam": [
        0.01, 0.030250000000000006, 0.046450000000000005, 0.05920750000000001, 0.06904900000000001,
        0.04985807500000001, 0.033914845000000006, 0.020761680250000004, 0.01, 0.018716961002500004,
        0.025690529804500005, 0.031182215236075006, 0.035418658283290015, 0.027157594341220753,
        0.020294556604732457, 0.014632550472129604, 0.01, 0.01375236588242498, 0.016754258588364962,
        0.019118249094292702, 0.020941898913151243
    ],
    "sequential": [
        0.025, 0.025, 0.025, 0.05, 0.05, 0.045000000000000005, 0.04050000000000001, 0.03645000000000001,
        0.03280500000000001, 0.02952450000000001, 0.02657205000000001, 0.02391484500000001,
        0.021523360500000012, 0.01937102445000001, 0.01743392200500001, 0.015690529804500006,
        0.014121476824050006, 0.012709329141645007, 0.011438396227480507, 0.010294556604732457,
        0.00926510094425921
    ],
    "sequential_three": [
        0.0125, 0.021875000000000002, 0.03125000000000001, 0.04062500000000001, 0.05000000000000001, 0.05, 0.05,
        0.05, 0.025, 0.025, 0.025, 0.0125, 0.05, 0.04522542485937369, 0.032725424859373686,
        0.017274575140626316, 0.004774575140626317, 0.0, 0.004774575140626314, 0.017274575140626323,
        0.03272542485937371
    ],
    "chained": [
        0.025, 0.022500000000000003, 0.020250000000000004, 0.018225000000000005, 0.03280500000000001,
        0.02952450000000001, 0.02657205000000001, 0.02391484500000001, 0.021523360500000012,
        0.01937102445000001, 0.01743392200500001, 0.015690529804500006, 0.014121476824050006,
        0.012709329141645007, 0.011438396227480507, 0.010294556604732457, 0.00926510094425921,
        0.00833859084983329, 0.007504731764849962, 0.006754258588364966, 0.00607883272952847
    ],
}
TORCH_MOMENTUMS = {
    "one_cycle_cos": [
        0.95, 0.9404508497187474, 0.9154508497187474, 0.8845491502812526, 0.8595491502812526, 0.85,
        0.8512536043909088, 0.854951556604879, 0.8609084258765984, 0.8688255099070633, 0.878305813044122,
        0.8888739533021842, 0.8999999999999999, 0.9111260466978157, 0.9216941869558779, 0.9311744900929366,
        0.9390915741234015, 0.945048443395121, 0.9487463956090911, 0.95, 0.9487463956090911
    ],
    "one_cycle_linear_three_phase": [
        0.95, 0.9249999999999999, 0.8999999999999999, 0.875, 0.85, 0.875, 0.8999999999999999,
        0.9249999999999999, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95
    ],
    "one_cycle_adam": [
        0.9, 0.8904508497187474, 0.8654508497187474, 0.8345491502812526, 0.8095491502812526, 0.8,
        0.8012536043909089, 0.804951556604879, 0.8109084258765985, 0.8188255099070634, 0.8283058130441221,
        0.8388739533021843, 0.8500000000000001, 0.8611260466978158, 0.871694186955878, 0.8811744900929367,
        0.8890915741234016, 0.895048443395121, 0.8987463956090912, 0.9, 0.8987463956090912
    ],
    "cyclic_triangular": [
        0.9, 0.8666666666666667, 0.8333333333333334, 0.8, 0.8200000000000001, 0.8400000000000001, 0.86, 0.88,
        0.9, 0.8666666666666667, 0.8333333333333334, 0.8, 0.8200000000000001, 0.8400000000000001, 0.86, 0.88,
        0.9, 0.8666666666666667, 0.8333333333333334, 0.8, 0.8200000000000001
    ],
    "cyclic_exp_range_adam": [
        0.9, 0.8775000000000001, 0.8595, 0.845325, 0.8343900000000001, 0.85571325, 0.8734279500000001,
        0.8880425775, 0.9, 0.890314487775, 0.882566077995, 0.87646420529325, 0.8717570463519,
        0.8809360062875325, 0.8885616037725195, 0.8948527216976337, 0.9, 0.8958307045750834, 0.89249526823515,
        0.8898686121174526, 0.8878423345409431
    ],
}


SCHEDULERS = {
    "constant": ("SGD", lambda o: L.ConstantLR(o, factor=0.5, total_iters=4)),
    "polynomial": ("SGD", lambda o: L.PolynomialLR(o, total_iters=12, power=2.0)),
    "warm_restarts": ("SGD", lambda o: L.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2, eta_min=0.001)),
    "warm_restarts_t_mult_1": ("SGD", lambda o: L.CosineAnnealingWarmRestarts(o, T_0=4)),
    "one_cycle_cos": ("SGD", lambda o: L.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=20)),
    "one_cycle_linear_three_phase": ("SGD", lambda o: L.OneCycleLR(
        o, max_lr=0.5, epochs=4, steps_per_epoch=5, pct_start=0.25, anneal_strategy="linear", three_phase=True,
        div_factor=10.0)),
    "one_cycle_adam": ("Adam", lambda o: L.OneCycleLR(o, max_lr=0.5, total_steps=20, base_momentum=0.8,
                                                      max_momentum=0.9)),
    "cyclic_triangular": ("SGD", lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=3, step_size_down=5)),
    "cyclic_triangular2": ("SGD", lambda o: L.CyclicLR(o, base_lr=[0.01, 0.02], max_lr=[0.1, 0.2], step_size_up=2,
                                                       mode="triangular2", cycle_momentum=False)),
    "cyclic_exp_range_adam": ("Adam", lambda o: L.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=4,
                                                           mode="exp_range", gamma=0.9)),
    "sequential": ("SGD", lambda o: L.SequentialLR(
        o, [L.ConstantLR(o, factor=0.5, total_iters=3), L.ExponentialLR(o, 0.9)], milestones=[4])),
    "sequential_three": ("SGD", lambda o: L.SequentialLR(
        o, [L.LinearLR(o, 0.25, 1.0, 4), L.StepLR(o, 3, 0.5), L.CosineAnnealingLR(o, 5)], milestones=[5, 12])),
    "chained": ("SGD", lambda o: L.ChainedScheduler([L.ConstantLR(o, factor=0.5, total_iters=4),
                                                     L.ExponentialLR(o, 0.9)])),
}


def two_groups(kind="SGD"):
    groups = [{"params": [nn.Parameter(ag.zeros(2))]}, {"params": [nn.Parameter(ag.zeros(2))], "lr": 0.05}]
    return optim.SGD(groups, lr=0.1, momentum=0.5) if kind == "SGD" else optim.Adam(groups, lr=0.1)


def momentum_of(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def run_schedule(name, steps=20):
    kind, make = SCHEDULERS[name]
    opt = two_groups(kind)
    scheduler = make(opt)
    lrs, momentums = [scheduler.get_last_lr()[1]], [momentum_of(opt.param_groups[1])]
    for _ in range(steps):
        opt.step()
        scheduler.step()
        assert [g["lr"] for g in opt.param_groups] == scheduler.get_last_lr()
        lrs.append(scheduler.get_last_lr()[1])
        momentums.append(momentum_of(opt.param_groups[1]))
    return opt, scheduler, lrs, momentums


@pytest.mark.parametrize("name", list(SCHEDULERS))
def test_schedule_matches_pytorch_over_20_steps(name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, _, lrs, momentums = run_schedule(name)
    assert lrs == TORCH_LRS[name]  # bit for bit
    assert momentums == TORCH_MOMENTUMS.get(name, [0.5] * 21)


@pytest.mark.parametrize(("make", "warns", "expected"), [
    (lambda o: L.ConstantLR(o, 0.5, 4), True, [0.5, 1.0, 1.0, 0.5, 1.0, 0.5, 1.0]),
    (lambda o: L.PolynomialLR(o, 8, 1.5), True, [
        0.649519052838329, 0.22963966338592295, 0.0, 0.421875, 0.02870495792324037, 1.0, 0.0]),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 3, 2, 0.01), False, [
        0.2575000000000001, 0.7525, 1.0, 0.9831332840130887, 0.20366309264068327, 1.0, 0.02686671598691124]),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 3), False, [
        0.2500000000000001, 0.2500000000000001, 1.0, 0.9330127018922194, 0.6294095225512604, 1.0,
        0.2500000000000001]),
])
def test_step_with_an_epoch_uses_the_closed_form(make, warns, expected):
    opt = optim.SGD([nn.Parameter(ag.zeros(1))], lr=1.0)
    scheduler = make(opt)
    opt.step()
    seen = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epoch in [2, 5, 9, 3.5, 7.25, 0, 20]:
            scheduler.step(epoch)
            seen.append(scheduler.get_last_lr()[0])
    assert seen == expected and scheduler.last_epoch == 20
    assert bool(caught) == warns  # CosineAnnealingWarmRestarts takes an epoch without the deprecation warning


@pytest.mark.parametrize("name", ["warm_restarts", "one_cycle_adam", "cyclic_triangular", "sequential_three",
                                  "chained"])
def test_scheduler_state_dict_round_trip_continues_identically(name):
    opt, scheduler, _, _ = run_schedule(name, steps=7)
    saved, saved_opt = scheduler.state_dict(), opt.state_dict()
    kind, make = SCHEDULERS[name]
    resumed_opt = two_groups(kind)
    resumed = make(resumed_opt)
    resumed_opt.load_state_dict(saved_opt)
    resumed.load_state_dict(saved)
    assert resumed.get_last_lr() == scheduler.get_last_lr()
    for o, s in ((opt, scheduler), (resumed_opt, resumed)):
        for _ in range(5):
            o.step()
            s.step()
    assert resumed.get_last_lr() == scheduler.get_last_lr()
    assert [momentum_of(g) for g in resumed_opt.param_groups] == [momentum_of(g) for g in opt.param_groups]


def test_combined_schedulers_save_each_schedulers_state():
    opt, scheduler, _, _ = run_schedule("sequential", steps=5)
    state = scheduler.state_dict()
    assert list(state) == ["_milestones", "last_epoch", "_last_lr", "_schedulers"] and state["last_epoch"] == 5
    # The first ran to epoch 3; the second restarted at its milestone (4) and took one step since.
    assert [s["last_epoch"] for s in state["_schedulers"]] == [3, 1] and state["_schedulers"][1]["_step_count"] == 2
    chained = run_schedule("chained", steps=2)[1].state_dict()
    assert list(chained) == ["_last_lr", "_schedulers"] and chained["_schedulers"][0]["factor"] == 0.5


def test_cyclic_lr_saves_a_callable_objects_scale_fn_but_not_a_function():
    class Halving:
        def __init__(self):
            self.calls = 0

        def __call__(self, x):
            self.calls += 1
            return 0.5**x

    halving = Halving()
    opt = two_groups()
    scheduler = L.CyclicLR(opt, 0.01, 0.1, step_size_up=2, scale_fn=halving, scale_mode="iterations")
    opt.step()
    scheduler.step()
    assert scheduler.get_last_lr()[0] == 0.01 + (0.1 - 0.01) * 0.5 * 0.5
    state = scheduler.state_dict()
    # PyTorch calls scale_fn once per group for the lr and once for the momentum: 2 steps * 2 groups * 2.
    assert state["_scale_fn_custom"] == {"calls": 8} and list(state)[-1] == "_scale_fn_custom"
    halving.calls = 9
    scheduler.load_state_dict(state)
    assert halving.calls == 8 and scheduler.scale_mode == "iterations"
    by_mode = L.CyclicLR(two_groups(), 0.01, 0.1, scale_fn=lambda x: 1.0)
    assert by_mode.state_dict()["_scale_fn_custom"] is None
    exp_range = L.CyclicLR(two_groups(), 0.01, 0.1, mode="exp_range", scale_mode="cycle")
    assert exp_range.scale_mode == "iterations"  # a built-in mode fixes its scale mode, as in PyTorch


def test_one_cycle_lr_refuses_to_step_past_its_total():
    opt = two_groups()
    scheduler = L.OneCycleLR(opt, max_lr=1.0, total_steps=2)
    for _ in range(2):
        opt.step()
        scheduler.step()
    with pytest.raises(ValueError, match=r"^Tried to step 3 times. The specified number of total steps is 2$"):
        scheduler.step()
    assert opt.param_groups[0]["initial_lr"] == 0.04 and opt.param_groups[0]["min_lr"] == 0.04 / 1e4


def test_sequential_lr_starts_the_first_scheduler_from_the_initial_lr():
    opt = two_groups()
    first, second = L.ExponentialLR(opt, 0.5), L.ConstantLR(opt, 0.25, 2)
    assert opt.param_groups[0]["lr"] == 0.025  # each took its first step when made
    scheduler = L.SequentialLR(opt, [first, second], milestones=[2])
    assert scheduler.get_last_lr() == [0.1, 0.05] and first.last_epoch == 0 and second.last_epoch == -1
    assert first._step_count == 1


@pytest.mark.parametrize(("make", "error", "text"), [
    (lambda o: L.ConstantLR(o, factor=1.5), ValueError,
     "Constant multiplicative factor expected to be between 0 and 1."),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 0), ValueError, "Expected positive integer T_0, but got 0"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 2, T_mult=0), ValueError, "Expected integer T_mult >= 1, but got 0"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 2, eta_min="a"), ValueError,
     "Expected float or int eta_min, but got a of type <class 'str'>"),
    (lambda o: L.CosineAnnealingWarmRestarts(o, 2).step(-1), ValueError, "Expected non-negative epoch, but got -1"),
    (lambda o: L.OneCycleLR(o, 1.0), ValueError, "You must define either total_steps OR (epochs AND steps_per_epoch)"),
    (lambda o: L.OneCycleLR(o, 1.0, total_steps=0), ValueError, "Expected positive integer total_steps, but got 0"),
    (lambda o: L.OneCycleLR(o, 1.0, epochs=0, steps_per_epoch=2), ValueError,
     "Expected positive integer epochs, but got 0"),
    (lambda o: L.OneCycleLR(o, 1.0, epochs=2, steps_per_epoch=1.5), ValueError,
     "Expected positive integer steps_per_epoch, but got 1.5"),
    (lambda o: L.OneCycleLR(o, 1.0, 10, pct_start=1), ValueError,
     "Expected float between 0 and 1 pct_start, but got 1"),
    (lambda o: L.OneCycleLR(o, 1.0, 10, anneal_strategy="x"), ValueError,
     "anneal_strategy must be one of 'cos' or 'linear', instead got x"),
    (lambda o: L.OneCycleLR(o, [1.0], 10), ValueError,
     "max_lr must have the same length as optimizer.param_groups. max_lr has 1 values, param_groups has 2."),
    (lambda o: L.OneCycleLR(optim.Adagrad([nn.Parameter(ag.zeros(1))]), 1.0, 10), ValueError,
     "optimizer must support momentum or beta1 with `cycle_momentum` option enabled"),
    (lambda o: L.CyclicLR(o, 0.1, 1.0, mode="x"), ValueError, "mode is invalid and scale_fn is None"),
    (lambda o: L.CyclicLR(3, 0.1, 1.0), TypeError, "int is not an Optimizer"),
    (lambda o: L.SequentialLR(o, [], []), ValueError,
     "SequentialLR expects at least one scheduler, but got no scheduler."),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2), L.StepLR(o, 3)], []), ValueError,
     "Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone "
     "points, but got number of schedulers 2 and the number of milestones to be equal to 0"),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2), L.ReduceLROnPlateau(o)], [1]), ValueError,
     "SequentialLR does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be specified "
     "when calling `step`, but got one at index 1 in the given schedulers sequence."),
    (lambda o: L.SequentialLR(o, [L.StepLR(o, 2), 3], [1]), TypeError,
     "SequentialLR at index 1 should have `optimizer` as its attribute."),
    (lambda o: L.SequentialLR(o, [L.StepLR(two_groups(), 2)], []), ValueError,
     "SequentialLR expects all schedulers to belong to the same optimizer, but got scheduler StepLR at index 0 has "),
    (lambda o: L.ChainedScheduler([]), ValueError,
     "ChainedScheduler expects at least one scheduler to be chained, but got no scheduler."),
    (lambda o: L.ChainedScheduler([L.StepLR(o, 2), L.ReduceLROnPlateau(o)]), ValueError,
     "ChainedScheduler does not support `ReduceLROnPlateau` scheduler"),
])
def test_scheduler_argument_errors(make, error, text):
    with pytest.raises(error, match=f"^{re.escape(text)}"):
        make(two_groups())


def test_schedulers_are_exported():
    new = {"ConstantLR", "PolynomialLR", "CosineAnnealingWarmRestarts", "OneCycleLR", "CyclicLR", "SequentialLR",
           "ChainedScheduler"}
    assert new <= set(L.__all__) and all(getattr(L, name).__name__ == name for name in new)


# -- on cuda -------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize(("name", "case"), list(TORCH_PARAMS))
def test_optimizers_step_cuda_parameters_as_cpu_ones(name, case):
    pytest.importorskip("cupy")
    cuda = ag.device("cuda:0")
    p, opt = run(name, OPTIONS[name][case], device=cuda)
    for key, value in opt.state[p].items():  # counters stay on the cpu, as PyTorch keeps them
        assert value.device == (ag.device("cpu") if key in ("step", "mu_product") else cuda), key
    # A GPU may fuse multiply-adds: the values agree to rounding, not to the bit.
    np.testing.assert_allclose(p.detach().cpu().numpy(), run(name, OPTIONS[name][case])[0].detach().numpy(),
                               rtol=1e-12, atol=1e-15)
    saved = opt.state_dict()
    moved = nn.Parameter(ag.tensor(START, dtype=ag.float64, device=cuda))
    loaded = getattr(optim, name)([moved])
    loaded.load_state_dict(saved)
    assert all(v.device == cuda for k, v in loaded.state[moved].items() if k not in ("step",))
