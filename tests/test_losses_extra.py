"""The margin, embedding and likelihood losses (margin_ranking ... multilabel_margin) and their modules as
PyTorch 2.13's: values and gradients against torch's numbers (literals below, from inputs of a fixed numpy seed)
for every reduction, gradcheck in float64, output shapes, and error texts."""

import re
import warnings

import numpy as np
import pytest

import actorgrad as ag
from actorgrad.autograd import gradcheck
from actorgrad.nn import loss as nn_loss
from actorgrad.ops import class_losses
from actorgrad.ops import composite_losses as losses

MULTILABEL_TARGET = [[3, 0, -1, 1], [0, 1, 2, 3], [1, -1, 0, 0]]


def _inputs() -> dict:
    rng = np.random.default_rng(0)
    normal = lambda *shape: rng.standard_normal(shape)  # noqa: E731
    sign = lambda *shape: np.where(rng.standard_normal(shape) > 0, 1.0, -1.0)  # noqa: E731
    return dict(a=normal(3, 4), b=normal(3, 4), c=normal(3, 4), s=sign(3, 4), s3=np.array([1.0, -1.0, 1.0]),
                pos=rng.uniform(0.5, 2.0, (3, 4)), counts=rng.uniform(0.0, 4.0, (3, 4)),
                var3=rng.uniform(0.5, 2, 3), w4=rng.uniform(0.5, 2, 4), bits=(rng.standard_normal((3, 4)) > 0) * 1.0)


INPUTS = _inputs()


def squared_distance(x, y):
    return ((x - y) ** 2).sum(-1)


# name: (function, [(input, requires grad)], keywords); t3 and mt are class targets, w4 a constant weight except
# for multilabel_soft_margin_loss (composed in Python in PyTorch, so its weight gets a gradient).
CASES = {
    "margin_ranking": ("margin_ranking_loss", [("a", 1), ("b", 1), ("s", 1)], dict(margin=0.3)),
    "hinge": ("hinge_embedding_loss", [("a", 1), ("s", 0)], dict(margin=0.8)),
    "soft_margin": ("soft_margin_loss", [("a", 1), ("s", 0)], {}),
    "cosine": ("cosine_embedding_loss", [("a", 1), ("b", 1), ("s3", 0)], dict(margin=-0.2)),
    "triplet": ("triplet_margin_loss", [("a", 1), ("b", 1), ("c", 1)], dict(margin=1.5)),
    "triplet_p1_swap": ("triplet_margin_loss", [("a", 1), ("b", 1), ("c", 1)], dict(margin=2.0, p=1, swap=True)),
    "triplet_distance": ("triplet_margin_with_distance_loss", [("a", 1), ("b", 1), ("c", 1)], dict(margin=1.5)),
    "triplet_distance_swap": ("triplet_margin_with_distance_loss", [("a", 1), ("b", 1), ("c", 1)],
                              dict(margin=4.0, swap=True, distance_function=squared_distance)),
    "poisson": ("poisson_nll_loss", [("a", 1), ("counts", 1)], {}),
    "poisson_rates_full": ("poisson_nll_loss", [("pos", 1), ("counts", 1)], dict(log_input=False, full=True)),
    "gaussian": ("gaussian_nll_loss", [("a", 1), ("b", 1), ("pos", 1)], {}),
    "gaussian_row_var_full": ("gaussian_nll_loss", [("a", 1), ("b", 1), ("var3", 1)], dict(full=True)),
    "multilabel_soft_margin": ("multilabel_soft_margin_loss", [("a", 1), ("bits", 0)], dict(weight="w4")),
    "multi_margin": ("multi_margin_loss", [("a", 1), ("t3", 0)], {}),
    "multi_margin_p2_weight": ("multi_margin_loss", [("a", 1), ("t3", 0)], dict(p=2, margin=0.7, weight="w4")),
    "multilabel_margin": ("multilabel_margin_loss", [("a", 1), ("mt", 0)], {}),
}


def _case(name: str) -> tuple:
    """The case's loss function, its tensor arguments, its keywords and the tensors that require grad."""
    function, args, keywords = CASES[name]
    tensors = []
    for key, requires_grad in args:
        if key in ("t3", "mt"):
            tensors.append(ag.tensor([0, 2, 3] if key == "t3" else MULTILABEL_TARGET))
        else:
            tensors.append(ag.tensor(INPUTS[key], requires_grad=bool(requires_grad)))
    keywords = dict(keywords)
    if keywords.get("weight") == "w4":
        keywords["weight"] = ag.tensor(INPUTS["w4"], requires_grad=function == "multilabel_soft_margin_loss")
    leaves = [t for t in (*tensors, keywords.get("weight")) if t is not None and t.requires_grad]
    return getattr(losses, function, None) or getattr(class_losses, function), tensors, keywords, leaves


def raises(kind, text):
    return pytest.raises(kind, match=f"^{re.escape(text)}$")


# PyTorch 2.13's losses and gradients (of the loss times LINSPACE) for the cases above, per reduction.
TORCH = {
    ('margin_ranking', 'none'): (
        [[2.75076099573, 0.386686800641, 0, 0], [0.308589609696, 0, 0, 0.395432406313], [0.875200572863, 0,
         0.258079789051, 0.610184090746]],
        [[[0.5, 0.590909090909, 0.0, 0.0], [0.863636363636, 0.0, 0.0, -1.13636363636], [-1.22727272727, 0,
         -1.40909090909, -1.5]], [[-0.5, -0.590909090909, 0, 0], [-0.863636363636, 0, 0, 1.13636363636],
         [1.22727272727, 0.0, 1.40909090909, 1.5]], [[-1.22538049787, -0.0512240185607, 0.0, 0.0], [-0.00741829928308,
         0.0, 0.0, 0.108445916265], [0.705927975786, 0, -0.0590693881558, 0.465276136119]]],
    ),
    ('margin_ranking', 'mean'): (
        0.465411188754,
        [[[0.0416666666667, 0.0416666666667, 0.0, 0.0], [0.0416666666667, 0.0, 0.0, -0.0416666666667],
         [-0.0416666666667, 0, -0.0416666666667, -0.0416666666667]], [[-0.0416666666667, -0.0416666666667, 0, 0],
         [-0.0416666666667, 0, 0, 0.0416666666667], [0.0416666666667, 0.0, 0.0416666666667, 0.0416666666667]],
         [[-0.102115041489, -0.00361195002672, 0.0, 0.0], [-0.000357900404008, 0.0, 0.0, 0.00397635026306],
         [0.023966690536, 0, -0.00174667545622, 0.0129243371144]]],
    ),
    ('margin_ranking', 'sum'): (
        5.58493426504,
        [[[0.5, 0.5, 0.0, 0.0], [0.5, 0.0, 0.0, -0.5], [-0.5, 0, -0.5, -0.5]], [[-0.5, -0.5, 0, 0], [-0.5, 0, 0, 0.5],
         [0.5, 0.0, 0.5, 0.5]], [[-1.22538049787, -0.0433434003206, 0.0, 0.0], [-0.0042948048481, 0.0, 0.0,
         0.0477162031567], [0.287600286431, 0, -0.0209601054746, 0.155092045373]]],
    ),
    ('hinge', 'none'): (
        [[0.674269778907, 0.932104863291, 0.640422650443, 0.104900117153], [1.33566937316, 0.361595054909,
         1.30400004513, 0.947080963129], [-0.703735235807, 2.06542147105, -0.623274462537, 0.0413259793472]],
        [[[-0.5, -0.590909090909, 0.681818181818, 0.772727272727], [-0.863636363636, 0.954545454545, 1.04545454545,
         1.13636363636], [1.22727272727, -1.31818181818, 1.40909090909, 1.5]]],
    ),
    ('hinge', 'mean'): (
        0.589981716514,
        [[[-0.0416666666667, -0.0416666666667, 0.0416666666667, 0.0416666666667], [-0.0416666666667, 0.0416666666667,
         0.0416666666667, 0.0416666666667], [0.0416666666667, -0.0416666666667, 0.0416666666667, 0.0416666666667]]],
    ),
    ('hinge', 'sum'): (
        7.07978059817,
        [[[-0.5, -0.5, 0.5, 0.5], [-0.5, 0.5, 0.5, 0.5], [0.5, -0.5, 0.5, 0.5]]],
    ),
    ('soft_margin', 'none'): (
        [[0.757987001999, 0.629274626362, 0.423350611809, 0.642071996097], [0.460759401493, 0.528605253867,
         0.240153129491, 0.327771339096], [1.1056834338, 0.248515242948, 1.0525770792, 0.672697655268]],
        [[[0.265695606621, 0.275967386376, -0.235330230636, -0.366117403454], [0.318850719765, -0.391911071082,
         -0.223196794073, -0.317582093865], [-0.821064355939, 0.290055400696, -0.917265914623, -0.734504962931]]],
    ),
    ('soft_margin', 'mean'): (
        0.590787230952,
        [[[0.0221413005517, 0.019459238783, -0.0143812918722, -0.0197416246961], [0.0153831487606, -0.0171072292933,
         -0.00889552440146, -0.0116446767751], [-0.027875641714, 0.00916841783808, -0.0271234544647,
         -0.020402915637]]],
    ),
    ('soft_margin', 'sum'): (
        7.08944677142,
        [[[0.265695606621, 0.233510865395, -0.172575502467, -0.236899496353], [0.184597785127, -0.205286751519,
         -0.106746292818, -0.139736121301], [-0.334507700568, 0.110021014057, -0.325481453576, -0.244834987644]]],
    ),
    ('cosine', 'none'): (
        [1.61479393536, 0.962169631867, 1.49006632449],
        [[[0.542902357797, 0.148459024495, -0.0967324042402, 0.126811568246], [-0.108416599579, -0.233108061224,
         -0.145224320727, 0.227633961019], [0.286146763179, -0.456375329916, 0.588508735663, -0.225841364163]],
         [[0.060803907491, 0.0445969218795, -0.12218887707, 0.0015132023669], [0.0110400935336, 0.307875007857,
         0.394339898343, -0.0565295010991], [0.466253476661, 0.359010662817, 0.578388456683, -0.130591713073]]],
    ),
    ('cosine', 'mean'): (
        1.35567663057,
        [[[0.180967452599, 0.0494863414984, -0.0322441347467, 0.0422705227486], [-0.0180694332632, -0.0388513435374,
         -0.0242040534544, 0.0379389935032], [0.0317940847977, -0.0507083699907, 0.0653898595181, -0.025093484907]],
         [[0.0202679691637, 0.0148656406265, -0.0407296256898, 0.000504400788966], [0.00184001558893, 0.0513125013096,
         0.0657233163906, -0.00942158351651], [0.0518059418512, 0.0398900736463, 0.0642653840759, -0.0145101903414]]],
    ),
    ('cosine', 'sum'): (
        4.06702989171,
        [[[0.542902357797, 0.148459024495, -0.0967324042402, 0.126811568246], [-0.0542082997895, -0.116554030612,
         -0.0726121603633, 0.11381698051], [0.0953822543931, -0.152125109972, 0.196169578554, -0.0752804547211]],
         [[0.060803907491, 0.0445969218795, -0.12218887707, 0.0015132023669], [0.00552004676679, 0.153937503929,
         0.197169949172, -0.0282647505495], [0.155417825554, 0.119670220939, 0.192796152228, -0.0435305710243]]],
    ),
    ('triplet', 'none'): (
        [2.80113133674, 0.0332513725683, 2.12410432125],
        [[[0.58655697013, 0.0729025745343, -0.0691573526757, -0.138999272944], [0.0377141477926, 0.548147986223,
         -0.0993760411266, -0.531021542642], [0.0730396394468, -0.158029113467, 0.625141638406, 0.0540516565881]],
         [[-0.382318655704, -0.0135232892728, -0.294268031271, -0.130598207951], [-0.00763783468076, -0.602711492614,
         -0.793398683085, 0.0848472146391], [0.318126335805, 1.45561929129, -0.0231854157426, 0.171553343818]],
         [[-0.204238314427, -0.0593792852615, 0.363425383947, 0.269597480895], [-0.0300763131119, 0.0545635063907,
         0.892774724212, 0.446174328003], [-0.391165975252, -1.29759017783, -0.601956222664, -0.225605000407]]],
    ),
    ('triplet', 'mean'): (
        1.65282901018,
        [[[0.195518990043, 0.0243008581781, -0.0230524508919, -0.0463330909812], [0.00628569129877, 0.0913579977038,
         -0.0165626735211, -0.0885035904404], [0.00811551549408, -0.0175587903853, 0.0694601820451, 0.0060057396209]],
         [[-0.127439551901, -0.00450776309093, -0.0980893437571, -0.0435327359837], [-0.00127297244679,
         -0.100451915436, -0.132233113847, 0.0141412024398], [0.035347370645, 0.161735476811, -0.00257615730473,
         0.0190614826465]], [[-0.0680794381423, -0.0197930950872, 0.121141794649, 0.089865826965], [-0.00501271885198,
         0.00909391773178, 0.148795787369, 0.0743623880005], [-0.0434628861391, -0.144176686425, -0.0668840247404,
         -0.0250672222674]]],
    ),
    ('triplet', 'sum'): (
        4.95848703055,
        [[[0.58655697013, 0.0729025745343, -0.0691573526757, -0.138999272944], [0.0188570738963, 0.274073993111,
         -0.0496880205633, -0.265510771321], [0.0243465464823, -0.0526763711558, 0.208380546135, 0.0180172188627]],
         [[-0.382318655704, -0.0135232892728, -0.294268031271, -0.130598207951], [-0.00381891734038, -0.301355746307,
         -0.396699341542, 0.0424236073195], [0.106042111935, 0.485206430432, -0.0077284719142, 0.0571844479395]],
         [[-0.204238314427, -0.0593792852615, 0.363425383947, 0.269597480895], [-0.0150381565559, 0.0272817531953,
         0.446387362106, 0.223087164002], [-0.130388658417, -0.432530059276, -0.200652074221, -0.0752016668022]]],
    ),
    ('triplet_p1_swap', 'none'): (
        [3.84654835111, 0.378322634788, 3.81916314838],
        [[[1, 1, 0, 0], [1, 1, 1, -1], [-1.5, -1.5, 1.5, -1.5]], [[-0.5, -0.5, -0.5, -0.5], [0, 0, -2, 0], [0, 0, 0,
         3]], [[-0.5, -0.5, 0.5, 0.5], [-1, -1, 1, 1], [1.5, 1.5, -1.5, -1.5]]],
    ),
    ('triplet_p1_swap', 'mean'): (
        2.68134471142,
        [[[0.333333333333, 0.333333333333, 0, 0], [0.166666666667, 0.166666666667, 0.166666666667, -0.166666666667],
         [-0.166666666667, -0.166666666667, 0.166666666667, -0.166666666667]], [[-0.166666666667, -0.166666666667,
         -0.166666666667, -0.166666666667], [0, 0, -0.333333333333, 0], [0, 0, 0, 0.333333333333]], [[-0.166666666667,
         -0.166666666667, 0.166666666667, 0.166666666667], [-0.166666666667, -0.166666666667, 0.166666666667,
         0.166666666667], [0.166666666667, 0.166666666667, -0.166666666667, -0.166666666667]]],
    ),
    ('triplet_p1_swap', 'sum'): (
        8.04403413427,
        [[[1, 1, 0, 0], [0.5, 0.5, 0.5, -0.5], [-0.5, -0.5, 0.5, -0.5]], [[-0.5, -0.5, -0.5, -0.5], [0, 0, -1, 0], [0,
         0, 0, 1]], [[-0.5, -0.5, 0.5, 0.5], [-0.5, -0.5, 0.5, 0.5], [0.5, 0.5, -0.5, -0.5]]],
    ),
    ('triplet_distance_swap', 'none'): (
        [10.6476397321, 1.38305807345, 9.8989011059],
        [[[3.22850095629, 0.312803961693, 0.502411697899, -0.189458021555], [0.0171792193924, 1.35579042256,
         1.78473901751, -0.190864812627], [-1.72560171859, -7.89565482479, 0.125760632848, -0.930552272237]],
         [[-2.45076099573, -0.0866868006412, -1.8863335977, -0.837167471856], [0.155887094988, -0.282799862879,
         -4.62723645734, -2.312513076], [1.63353067768, 5.4188011672, 2.51380075513, 0.942140189078]],
         [[-0.777739960558, -0.226117161052, 1.3839218998, 1.02662549341], [-0.17306631438, -1.07299055968,
         2.84249743983, 2.50337788863], [0.0920710409113, 2.47685365759, -2.63956138798, -0.0115879168407]]],
    ),
    ('triplet_distance_swap', 'mean'): (
        7.30986630382,
        [[[1.07616698543, 0.104267987231, 0.167470565966, -0.0631526738517], [0.00286320323207, 0.225965070426,
         0.297456502919, -0.0318108021045], [-0.191733524288, -0.877294980532, 0.0139734036498, -0.103394696915]],
         [[-0.816920331911, -0.0288956002137, -0.628777865899, -0.279055823952], [0.0259811824979, -0.0471333104798,
         -0.771206076223, -0.385418846], [0.181503408631, 0.602089018577, 0.279311195015, 0.104682243231]],
         [[-0.259246653519, -0.0753723870174, 0.461307299932, 0.342208497804], [-0.02884438573, -0.178831759946,
         0.473749573304, 0.417229648105], [0.0102301156568, 0.275205961955, -0.293284598664, -0.00128754631563]]],
    ),
    ('triplet_distance_swap', 'sum'): (
        21.9295989115,
        [[[3.22850095629, 0.312803961693, 0.502411697899, -0.189458021555], [0.0085896096962, 0.677895211279,
         0.892369508756, -0.0954324063134], [-0.575200572863, -2.6318849416, 0.0419202109493, -0.310184090746]],
         [[-2.45076099573, -0.0866868006412, -1.8863335977, -0.837167471856], [0.0779435474938, -0.141399931439,
         -2.31361822867, -1.156256538], [0.544510225893, 1.80626705573, 0.837933585044, 0.314046729693]],
         [[-0.777739960558, -0.226117161052, 1.3839218998, 1.02662549341], [-0.08653315719, -0.536495279839,
         1.42124871991, 1.25168894431], [0.0306903469704, 0.825617885864, -0.879853795993, -0.0038626389469]]],
    ),
    ('poisson', 'none'): (
        [[0.930518635095, 0.981147258322, 1.66480137316, 0.867091933847], [1.22528687095, 0.463657378814,
         2.64333082235, -0.990856685402], [1.52249746183, 0.816104332963, 2.1046140196, 0.888929503529]],
        [[[-0.242115577567, 0.0485709107351, 1.04609346458, -0.935563989674], [-0.526392531085, -1.19543648684,
         3.0171208036, -1.3525904081], [-1.18518558447, -0.184361901375, -2.79034771667, -3.99963964364]],
         [[-0.0628651105467, 0.0780619646721, -0.43665180712, -0.0810591814364], [0.462623549548, -0.34515891605,
         -1.36327277445, -1.07622836719], [0.863675062127, 1.66805557547, 0.87825037903, -0.0619889690209]]],
    ),
    ('poisson', 'mean'): (
        1.09309357542,
        [[[-0.0201762981305, 0.00342487191081, 0.0639279339468, -0.0504470778746], [-0.0253961308857,
         -0.0521817514099, 0.12024756826, -0.0495949816303], [-0.0402377821887, -0.0058275313653, -0.0825102819445,
         -0.111101101212]], [[-0.00523875921222, 0.0055043693038, -0.0266842771018, -0.00437083821471],
         [0.022319557215, -0.0150664606212, -0.0543333352138, -0.0394617067971], [0.029322301492, 0.0527258946269,
         0.0259697692724, -0.00172191580614]]],
    ),
    ('poisson', 'sum'): (
        13.1171229051,
        [[[-0.242115577567, 0.0410984629297, 0.767135207362, -0.605364934495], [-0.304753570628, -0.626181016919,
         1.44297081911, -0.595139779564], [-0.482853386265, -0.0699303763836, -0.990123383335, -1.33321321455]],
         [[-0.0628651105467, 0.0660524316457, -0.320211325222, -0.0524500585765], [0.267834686581, -0.180797527455,
         -0.652000022565, -0.473540481565], [0.351867617903, 0.632710735523, 0.311637231269, -0.0206629896736]]],
    ),
    ('poisson_rates_full', 'none'): (
        [[1.70420431957, 1.30507129117, 1.49217911625, 2.1852819266], [1.12848058835, 3.39912234036, 1.00085014147,
         4.74840351784], [1.14034557304, 1.4719421319, 2.45310775964, 5.33720760807]],
        [[[-0.792450352222, 0.322629096583, 0.534548566702, -1.31533038518], [0.295033078416, -3.41015578557,
         0.214586607158, -4.76688824811], [-0.297478607087, 0.989912536901, -2.78244105242, -8.12390955518]],
         [[0.629335491056, -0.330332888671, -0.353985762758, 0.934580560956], [0.000446215433335, 1.6285338498,
         -0.004356312062, 2.02312551534], [0.686535556804, -0.695182325455, 1.81605822612, 2.99040986433]]],
    ),
    ('poisson_rates_full', 'mean'): (
        2.28051635952,
        [[[-0.0660375293518, 0.0227494875796, 0.032666856854, -0.070924677632], [0.0142340520289, -0.148856006513,
         0.00855236477803, -0.174785902431], [-0.0100995823394, 0.0312903388101, -0.0822764827329, -0.22566415431]],
         [[0.0524446242546, -0.0232927036883, -0.0216324632796, 0.0503940498555], [2.15279375732e-05, 0.0710867950308,
         -0.000173621132906, 0.0741812688957], [0.0233083059409, -0.0219741539655, 0.0537006464714,
         0.0830669406759]]],
    ),
    ('poisson_rates_full', 'sum'): (
        27.3661963143,
        [[[-0.792450352222, 0.272993850955, 0.392002282248, -0.851096131584], [0.170808624346, -1.78627207816,
         0.102628377336, -2.09743082917], [-0.121194988073, 0.375484065721, -0.987317792795, -2.70796985173]],
         [[0.629335491056, -0.27951244426, -0.259589559356, 0.604728598265], [0.000258335250878, 0.853041540369,
         -0.00208345359487, 0.890175226748], [0.279699671291, -0.263689847586, 0.644407757657, 0.996803288111]]],
    ),
    ('gaussian', 'none'): (
        [[4.56294743233, 0.28166073944, 1.3181858783, 0.331957548652], [0.297987669975, 0.125225295664,
         0.398589471785, -0.154225494491], [0.221579334601, 2.30761841308, -0.0826010016564, -0.190837415812]],
        [[[1.95740486815, 0.0292881691662, 0.765262539319, 0.753039987564], [0.00408783357257, 1.10075620244,
         0.929052416414, -0.149494135548], [-0.600529596775, -2.04740673424, 0.0698249997533, -0.804931517771]],
         [[-1.95740486815, -0.0292881691662, -0.765262539319, -0.753039987564], [-0.00408783357257, -1.10075620244,
         -0.929052416414, 0.149494135548], [0.600529596775, 2.04740673424, -0.0698249997533, 0.804931517771]],
         [[-3.43208747777, 0.16820513341, -0.226615716481, 0.0828275422053], [0.237942556061, 0.177211336887,
         0.107748335545, 0.77341284236], [0.375091863055, -1.20105924779, 0.831102134069, 1.08153454631]]],
    ),
    ('gaussian', 'mean'): (
        0.784840655988,
        [[[0.163117072346, 0.00206519141557, 0.0467660440695, 0.0406050973686], [0.000197220040782, 0.0480488818525,
         0.0370274513788, -0.00548145163677], [-0.0203883505078, -0.0647168795306, 0.00206471773464,
         -0.022359208827]], [[-0.163117072346, -0.00206519141557, -0.0467660440695, -0.0406050973686],
         [-0.000197220040782, -0.0480488818525, -0.0370274513788, 0.00548145163677], [0.0203883505078,
         0.0647168795306, -0.00206471773464, 0.022359208827]], [[-0.286007289814, 0.0118606183815, -0.0138487382294,
         0.00446619100127], [0.0114796847223, 0.00773541549903, 0.00429431772098, 0.0283584708865], [0.0127346002889,
         -0.0379645164531, 0.0245756007386, 0.0300426262864]]],
    ),
    ('gaussian', 'sum'): (
        9.41808787186,
        [[[1.95740486815, 0.0247822969868, 0.561192528834, 0.487261168424], [0.00236664048938, 0.57658658223,
         0.444329416546, -0.0657774196412], [-0.244660206094, -0.776602554367, 0.0247766128157, -0.268310505924]],
         [[-1.95740486815, -0.0247822969868, -0.561192528834, -0.487261168424], [-0.00236664048938, -0.57658658223,
         -0.444329416546, 0.0657774196412], [0.244660206094, 0.776602554367, -0.0247766128157, 0.268310505924]],
         [[-3.43208747777, 0.142327420578, -0.166184858753, 0.0535942920152], [0.137756216667, 0.0928249859884,
         0.0515318126518, 0.340301650638], [0.152815203467, -0.455574197437, 0.294907208863, 0.360511515437]]],
    ),
    ('gaussian_row_var_full', 'none'): (
        [[3.58102234687, 0.996629799766, 2.52637505342, 1.29533531698], [1.24820592566, 1.36712293158, 1.45428683978,
         1.2505439425], [1.16280662075, 3.80152158104, 1.03115080269, 1.06893827344]],
        [[[1.05584756124, 0.0441371110184, 1.1081979317, 0.557402411139], [0.00383992651709, 0.334948273082,
         0.482912493, -0.0561347464758], [-0.564812995569, -2.77578934115, 0.0472614193162, -0.372267451102]],
         [[-1.05584756124, -0.0441371110184, -1.1081979317, -0.557402411139], [-0.00383992651709, -0.334948273082,
         -0.482912493, 0.0561347464758], [0.564812995569, 2.77578934115, -0.0472614193162, 0.372267451102]],
         [-1.12146674112, 0.863563941202, -0.917453151909]],
    ),
    ('gaussian_row_var_full', 'mean'): (
        1.73199495287,
        [[[0.0879872967698, 0.0031122321872, 0.0677232069371, 0.0300560123654], [0.000185259612667, 0.014620757952,
         0.0192465124022, -0.00205827403745], [-0.0191757498496, -0.0877404676801, 0.00139751508731,
         -0.0103407625306]], [[-0.0879872967698, -0.0031122321872, -0.0677232069371, -0.0300560123654],
         [-0.000185259612667, -0.014620757952, -0.0192465124022, 0.00205827403745], [0.0191757498496, 0.0877404676801,
         -0.00139751508731, 0.0103407625306]], [-0.087090902616, 0.0360741589866, -0.031424799016]],
    ),
    ('gaussian_row_var_full', 'sum'): (
        20.7839394345,
        [[[1.05584756124, 0.0373467862464, 0.812678483245, 0.360672148384], [0.002223115352, 0.175449095424,
         0.230958148826, -0.0246992884494], [-0.230108998195, -1.05288561216, 0.0167701810477, -0.124089150367]],
         [[-1.05584756124, -0.0373467862464, -0.812678483245, -0.360672148384], [-0.002223115352, -0.175449095424,
         -0.230958148826, 0.0246992884494], [0.230108998195, 1.05288561216, -0.0167701810477, 0.124089150367]],
         [-1.04509083139, 0.432889907839, -0.377097588192]],
    ),
    ('multilabel_soft_margin', 'none'): (
        [0.971745993653, 1.83164067944, 1.72357116261],
        [[[-0.0666503997947, -0.0952911966122, -0.085970417581, -0.113914041542], [0.105021643022, 0.210767153016,
         0.391807469062, 0.346468566425], [-0.285462918416, -0.418346109449, -0.486426684185, 0.368091257242]],
         [0.60885323566, 0.885448781148, 0.83367352483, 0.666730938049]],
    ),
    ('multilabel_soft_margin', 'mean'): (
        1.50898594523,
        [[[-0.0222167999316, -0.0317637322041, -0.0286568058603, -0.0379713471805], [0.0175036071703, 0.035127858836,
         0.0653012448436, 0.0577447610708], [-0.0317181020462, -0.0464829010499, -0.0540474093539, 0.0408990285825]],
         [0.0916124840081, 0.131896521351, 0.125836702734, 0.109622830539]],
    ),
    ('multilabel_soft_margin', 'sum'): (
        4.5269578357,
        [[[-0.0666503997947, -0.0952911966122, -0.085970417581, -0.113914041542], [0.0525108215108, 0.105383576508,
         0.195903734531, 0.173234283212], [-0.0951543061386, -0.13944870315, -0.162142228062, 0.122697085747]],
         [0.274837452024, 0.395689564053, 0.377510108203, 0.328868491617]],
    ),
    ('multi_margin', 'none'): (
        [0.809006810256, 0.175168981945, 0.14758458574],
        [[[-0.375, 0.125, 0.125, 0.125], [0, 0.25, -0.5, 0.25], [0.375, 0, 0.375, -0.75]]],
    ),
    ('multi_margin', 'mean'): (
        0.377253459314,
        [[[-0.125, 0.0416666666667, 0.0416666666667, 0.0416666666667], [0, 0.0416666666667, -0.0833333333333,
         0.0416666666667], [0.0416666666667, 0, 0.0416666666667, -0.0833333333333]]],
    ),
    ('multi_margin', 'sum'): (
        1.13176037794,
        [[[-0.375, 0.125, 0.125, 0.125], [0, 0.125, -0.25, 0.125], [0.125, 0, 0.125, -0.25]]],
    ),
    ('multi_margin_p2_weight', 'none'): (
        [0.606544034355, 0.0586358218428, 0.000602571802256],
        [[[-0.66450802437, 0.125778556586, 0.345532300424, 0.19319716736], [0, 0, -0.341819196385, 0.341819196385],
         [0, 0, 0.0510660444086, -0.0510660444086]]],
    ),
    ('multi_margin_p2_weight', 'mean'): (
        0.221927476,
        [[[-0.22150267479, 0.0419261855286, 0.115177433475, 0.0643990557867], [0, 0, -0.0569698660642,
         0.0569698660642], [0, 0, 0.00567400493429, -0.00567400493429]]],
    ),
    ('multi_margin_p2_weight', 'sum'): (
        0.665782428,
        [[[-0.66450802437, 0.125778556586, 0.345532300424, 0.19319716736], [0, 0, -0.170909598193, 0.170909598193],
         [0, 0, 0.0170220148029, -0.0170220148029]]],
    ),
    ('multilabel_margin', 'none'): (
        [1.13884372445, 0, 1.37764517354],
        [[[-0.25, 0.25, 0.25, -0.25], [0, 0, 0, 0], [0.375, -1.125, 0.375, 0.375]]],
    ),
    ('multilabel_margin', 'mean'): (
        0.838829632663,
        [[[-0.0833333333333, 0.0833333333333, 0.0833333333333, -0.0833333333333], [0, 0, 0, 0], [0.0416666666667,
         -0.125, 0.0416666666667, 0.0416666666667]]],
    ),
    ('multilabel_margin', 'sum'): (
        2.51648889799,
        [[[-0.25, 0.25, 0.25, -0.25], [0, 0, 0, 0], [0.125, -0.375, 0.125, 0.125]]],
    ),
}
# Its default distance is pairwise_distance, so PyTorch gives triplet_margin_loss's numbers exactly.
TORCH.update({("triplet_distance", reduction): TORCH["triplet", reduction] for reduction in ("none", "mean", "sum")})


@pytest.mark.parametrize(("name", "reduction"), list(TORCH))
def test_values_and_gradients_match_pytorch(name, reduction):
    function, tensors, keywords, leaves = _case(name)
    loss = function(*tensors, reduction=reduction, **keywords)
    upstream = ag.tensor(np.linspace(0.5, 1.5, loss.numel()).reshape(loss.shape))
    grads = ag.autograd.grad((loss * upstream).sum(), leaves)
    value, expected = TORCH[name, reduction]
    np.testing.assert_allclose(loss.detach().numpy(), value, rtol=1e-9, atol=1e-12)
    assert len(grads) == len(expected)
    for grad, want in zip(grads, expected):
        np.testing.assert_allclose(grad.numpy(), want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", list(CASES))
def test_gradients_match_finite_differences(name):
    function, tensors, keywords, leaves = _case(name)
    weight = keywords.pop("weight", None)

    def loss(*grads):
        args = iter(grads)
        inputs = [next(args) if t.requires_grad else t for t in tensors]
        w = next(args) if weight is not None and weight.requires_grad else weight
        return function(*inputs, reduction="none", **keywords, **({} if weight is None else {"weight": w}))

    assert gradcheck(loss, leaves)


# -- shapes and special values ---------------------------------------------------------------------------------------
def test_multi_margin_shapes_follow_the_target_for_vector_inputs():
    x = ag.tensor([0.3, -0.2, 0.9, 0.1], requires_grad=True)
    assert class_losses.multi_margin_loss(x, ag.tensor([2]), reduction="none").shape == (1,)
    assert class_losses.multi_margin_loss(x, ag.tensor(2), reduction="none").shape == ()
    assert class_losses.multi_margin_loss(x[0], ag.tensor(0), reduction="none").item() == 0.0
    empty = class_losses.multi_margin_loss(ag.zeros(0, 4), ag.zeros(0, dtype=ag.int64))
    assert empty.item() == 0.0  # PyTorch's kernel: a mean over no samples is 0
    assert class_losses.multi_margin_loss(ag.zeros(0, 4), ag.zeros(0, dtype=ag.int64), reduction="none").shape == (0,)


def test_multilabel_margin_counts_targets_up_to_the_first_minus_one():
    x = ag.tensor([[0.1, 0.2, 0.4, 0.8]])
    once = class_losses.multilabel_margin_loss(x, ag.tensor([[3, -1, 0, 0]]))
    twice = class_losses.multilabel_margin_loss(x, ag.tensor([[3, 3, -1, 0]]))  # PyTorch counts a repeat twice
    np.testing.assert_allclose([once.item(), twice.item()], [0.325, 0.65], rtol=1e-6)
    vector = class_losses.multilabel_margin_loss(x[0], ag.tensor([3, -1, 0, 0]), reduction="none")
    assert vector.shape == ()


def test_empty_means_are_nan():
    assert np.isnan(losses.soft_margin_loss(ag.zeros(0), ag.zeros(0)).item())
    assert np.isnan(losses.cosine_embedding_loss(ag.zeros(0, 3), ag.zeros(0, 3), ag.zeros(0)).item())


def test_gaussian_nll_clamps_var_at_eps_keeping_its_gradient():
    var = ag.tensor([1e-9, 2.0], dtype=ag.float64, requires_grad=True)
    input, target = ag.tensor([1.0, 1.0], dtype=ag.float64), ag.tensor([0.0, 0.0], dtype=ag.float64)
    loss = losses.gaussian_nll_loss(input, target, var, reduction="sum")
    loss.backward()
    np.testing.assert_allclose(loss.item(), 499993.6888183113, rtol=1e-12)
    np.testing.assert_allclose(var.grad.numpy(), [-499999500000.0, 0.125], rtol=1e-12)
    float_var = losses.gaussian_nll_loss(ag.tensor([1.0, 3.0], dtype=ag.float64), target, 2.0, reduction="none")
    np.testing.assert_allclose(float_var.numpy(), [0.5965735902799727, 2.5965735902799727], rtol=1e-12)


def test_soft_margin_keeps_the_input_dtype_and_broadcasts_the_target():
    loss = losses.soft_margin_loss(ag.ones(2, 3), ag.tensor([1.0, -1.0, 1.0], dtype=ag.float64), reduction="none")
    assert loss.dtype == ag.float32 and loss.shape == (2, 3)


def test_deprecated_size_average_and_reduce_pick_the_reduction():
    x, s = ag.tensor(INPUTS["a"]), ag.tensor(INPUTS["s"])
    with pytest.warns(UserWarning, match="please use reduction='sum' instead"):
        summed = losses.hinge_embedding_loss(x, s, size_average=False)
    assert summed.item() == losses.hinge_embedding_loss(x, s, reduction="sum").item()
    with pytest.warns(UserWarning, match="please use reduction='none' instead"):
        assert losses.soft_margin_loss(x, s, reduce=False).shape == (3, 4)


# -- errors ----------------------------------------------------------------------------------------------------------
X, Y = ag.ones(3, 4), ag.zeros(3, 4)
T3 = ag.tensor([0, 2, 3])
ERRORS = [
    (lambda: losses.margin_ranking_loss(X, Y, X[0]), RuntimeError,
     "margin_ranking_loss : All input tensors should have same dimension but got sizes: input1: (3, 4), input2: "
     "(3, 4), target: (4,) "),
    (lambda: losses.margin_ranking_loss(X, Y, X, reduction="avg"), ValueError,
     "avg is not a valid value for reduction"),
    (lambda: losses.soft_margin_loss(X, ag.ones(3, 4, requires_grad=True)), RuntimeError,
     "The function 'soft_margin_loss' is not differentiable with respect to argument 'target'. This input cannot "
     "have requires_grad True."),
    (lambda: losses.soft_margin_loss(X[0], X), RuntimeError,
     "output with shape [4] doesn't match the broadcast shape [3, 4]"),
    (lambda: losses.soft_margin_loss(X, ag.ones(3)), RuntimeError,
     "The size of tensor a (4) must match the size of tensor b (3) at non-singleton dimension 1"),
    (lambda: losses.soft_margin_loss(ag.ones(3, dtype=ag.int64), ag.ones(3, dtype=ag.int64)), RuntimeError,
     "result type Float can't be cast to the desired output type Long"),
    (lambda: losses.cosine_embedding_loss(X, Y, X), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda: losses.cosine_embedding_loss(X[0], Y[0], ag.ones(3)), RuntimeError,
     "1D target tensor expects 2D input tensors, but found inputs with sizes [4] and [4]."),
    (lambda: losses.cosine_embedding_loss(X, Y, ag.tensor(1.0)), RuntimeError,
     "0D target tensor expects 1D input tensors, but found inputs with sizes [3, 4] and [3, 4]."),
    (lambda: losses.triplet_margin_loss(X, Y, Y[0]), RuntimeError,
     "The anchor, positive, and negative tensors are expected to have the same number of dimensions, but got: "
     "anchor 2D, positive 2D, and negative 1D inputs"),
    (lambda: losses.triplet_margin_loss(X, Y, Y, margin=0), ValueError, "margin must be greater than 0, got 0"),
    (lambda: losses.triplet_margin_with_distance_loss(X, Y, Y, margin=-1), ValueError,
     "margin must be greater than 0, got -1"),
    (lambda: losses.triplet_margin_with_distance_loss(X, Y, Y, reduction="x"), ValueError,
     "x is not a valid value for reduction"),
    (lambda: losses.poisson_nll_loss(X, Y, reduction="bad"), ValueError, "bad is not a valid value for reduction"),
    (lambda: losses.gaussian_nll_loss(X, Y, -1.0), ValueError, "var has negative entry/entries"),
    (lambda: losses.gaussian_nll_loss(X, Y, -X), ValueError, "var has negative entry/entries"),
    (lambda: losses.gaussian_nll_loss(X, Y, ag.ones(3, 5)), ValueError, "var is of incorrect size"),
    (lambda: losses.gaussian_nll_loss(X, Y, ag.ones(1, 1)), ValueError, "var is of incorrect size"),
    (lambda: losses.gaussian_nll_loss(X, Y, X, reduction="x"), ValueError, "x is not valid"),
    (lambda: class_losses.multilabel_soft_margin_loss(X, Y, reduction="x"), ValueError, "x is not valid"),
    (lambda: class_losses.multilabel_soft_margin_loss(X[0, 0], Y[0, 0]), IndexError,
     "Dimension specified as -1 but tensor has no dimensions"),
    (lambda: class_losses.multi_margin_loss(X, T3, p=3), ValueError, "only p == 1 and p == 2 supported"),
    (lambda: class_losses.multi_margin_loss(X, T3, weight=ag.ones(2, 2)), ValueError,
     "weight must be one-dimensional"),
    (lambda: class_losses.multi_margin_loss(X, T3, weight=ag.ones(4, requires_grad=True)), RuntimeError,
     "The function 'multi_margin_loss' is not differentiable with respect to argument 'weight'. This input cannot "
     "have requires_grad True."),
    (lambda: class_losses.multi_margin_loss(X, T3, weight=ag.ones(3)), RuntimeError,
     "inconsistent weight size, expected 4 but got [3]"),
    (lambda: class_losses.multi_margin_loss(X, T3, weight=ag.ones(4, dtype=ag.float64)), RuntimeError,
     "expected scalar type Float but found Double"),
    (lambda: class_losses.multi_margin_loss(X, ag.tensor([0, 4, 1])), RuntimeError, "target out of range"),
    (lambda: class_losses.multi_margin_loss(X, ag.tensor([0, 1])), RuntimeError,
     "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples (batch size). "
     "Expected target size [3], but got [2]. Input has shape [3, 4]."),
    (lambda: class_losses.multi_margin_loss(ag.ones(2, 3, 4), T3), RuntimeError,
     "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 3, 4]"),
    (lambda: class_losses.multi_margin_loss(ag.ones(2, 0), ag.tensor([0, 0])), RuntimeError,
     "Expected non-empty vector or matrix with optional 0-dim batch size, but got: [2, 0]"),
    (lambda: class_losses.multi_margin_loss(X, T3.double()), RuntimeError,
     "expected scalar type Long but found Double"),
    (lambda: class_losses.multi_margin_loss(ag.ones(3, 4, dtype=ag.int64), T3), NotImplementedError,
     "\"multi_margin_loss_cpu_kernel\" not implemented for 'Long'"),
    (lambda: class_losses.multilabel_margin_loss(X, ag.zeros(3, 3, dtype=ag.int64)), RuntimeError,
     "inconsistent target size: [3, 3] for input of size: [3, 4]"),
    (lambda: class_losses.multilabel_margin_loss(X[0], ag.tensor([1, -1, 0])), RuntimeError,
     "inconsistent target size: [3] for input of size: [4]"),
    (lambda: class_losses.multilabel_margin_loss(X[:1], ag.tensor([[3, -1, 7, -5]])), RuntimeError,
     "argument #2 'target' is out of range"),
    (lambda: class_losses.multilabel_margin_loss(X, ag.tensor(MULTILABEL_TARGET).double()), RuntimeError,
     "expected scalar type Long but found Double"),
]


@pytest.mark.parametrize(("call", "kind", "text"), ERRORS)
def test_errors_match_pytorch(call, kind, text):
    with raises(kind, text):
        call()


# -- modules ---------------------------------------------------------------------------------------------------------
MODULES = [
    (nn_loss.MarginRankingLoss(margin=0.3, reduction="sum"), "margin_ranking"),
    (nn_loss.HingeEmbeddingLoss(margin=0.8), "hinge"),
    (nn_loss.SoftMarginLoss(reduction="none"), "soft_margin"),
    (nn_loss.CosineEmbeddingLoss(margin=-0.2), "cosine"),
    (nn_loss.TripletMarginLoss(margin=2.0, p=1, swap=True, reduction="sum"), "triplet_p1_swap"),
    (nn_loss.TripletMarginWithDistanceLoss(margin=1.5), "triplet_distance"),
    (nn_loss.TripletMarginWithDistanceLoss(distance_function=squared_distance, margin=4.0, swap=True),
     "triplet_distance_swap"),
    (nn_loss.PoissonNLLLoss(log_input=False, full=True, reduction="none"), "poisson_rates_full"),
    (nn_loss.GaussianNLLLoss(full=True), "gaussian_row_var_full"),
    (nn_loss.MultiLabelSoftMarginLoss(weight=ag.tensor(INPUTS["w4"])), "multilabel_soft_margin"),
    (nn_loss.MultiMarginLoss(p=2, margin=0.7, weight=ag.tensor(INPUTS["w4"]), reduction="sum"),
     "multi_margin_p2_weight"),
    (nn_loss.MultiLabelMarginLoss(reduction="none"), "multilabel_margin"),
]


@pytest.mark.parametrize(("module", "name"), MODULES)
def test_modules_give_their_functions_values(module, name):
    _, tensors, _, _ = _case(name)
    value, _ = TORCH[name, module.reduction]
    np.testing.assert_allclose(module(*tensors).detach().numpy(), value, rtol=1e-9, atol=1e-12)


def test_module_defaults_and_checks_are_pytorch_s():
    triplet = nn_loss.TripletMarginLoss()
    assert (triplet.margin, triplet.p, triplet.eps, triplet.swap, triplet.reduction) == (1.0, 2.0, 1e-6, False, "mean")
    poisson = nn_loss.PoissonNLLLoss()
    assert (poisson.log_input, poisson.full, poisson.eps) == (True, False, 1e-8)
    assert (nn_loss.GaussianNLLLoss().eps, nn_loss.HingeEmbeddingLoss().margin) == (1e-6, 1.0)
    multi = nn_loss.MultiMarginLoss(weight=ag.ones(4))
    assert (multi.p, multi.margin) == (1, 1.0) and list(multi.state_dict()) == ["weight"]
    assert list(nn_loss.MultiLabelSoftMarginLoss(weight=ag.ones(4)).state_dict()) == ["weight"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert nn_loss.MarginRankingLoss().reduction == "mean"
    with pytest.warns(UserWarning, match="please use reduction='none' instead"):
        assert nn_loss.SoftMarginLoss(reduce=False).reduction == "none"
    with raises(ValueError, "TripletMarginLoss: expected margin to be greater than 0, got 0 instead"):
        nn_loss.TripletMarginLoss(margin=0)
    with raises(ValueError, "TripletMarginWithDistanceLoss: expected margin to be greater than 0, got -1 instead"):
        nn_loss.TripletMarginWithDistanceLoss(margin=-1)
    with raises(ValueError, "only p == 1 and p == 2 supported"):
        nn_loss.MultiMarginLoss(p=3)
    with raises(ValueError, "MultiMarginLoss: expected weight to be None or 1D tensor, got 2D instead"):
        nn_loss.MultiMarginLoss(weight=ag.ones(2, 2))
