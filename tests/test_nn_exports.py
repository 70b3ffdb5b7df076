"""The layers and ops written before they were exported are reachable as PyTorch names them (`nn.LSTM`,
`F.interpolate`, `actorgrad.pixel_shuffle`), each the object its module defines, and they run through those
names: a wrong wiring fails here, not in a user's import."""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable

import numpy as np
import pytest

import actorgrad as ag
import actorgrad.nn.functional as F
from actorgrad import nn

FUNCTIONS = {
    "conv": "conv_transpose1d conv_transpose2d conv3d conv_transpose3d",
    "pooling": "max_pool1d avg_pool1d max_pool3d avg_pool3d",
    "adaptive_pooling": "adaptive_avg_pool1d adaptive_avg_pool2d adaptive_max_pool1d adaptive_max_pool2d "
                        "adaptive_avg_pool3d adaptive_max_pool3d",
    "attention": "scaled_dot_product_attention multi_head_attention_forward",
    "piecewise_linear_activations": "hardshrink softshrink rrelu",
    "regularization": "dropout1d dropout2d dropout3d alpha_dropout",
    "normalization": "instance_norm rms_norm local_response_norm",
    "distances": "cosine_similarity pairwise_distance",
    "resampling": "interpolate pixel_shuffle pixel_unshuffle",
    "sliding_blocks": "unfold fold",
    "composite_losses": "margin_ranking_loss hinge_embedding_loss soft_margin_loss cosine_embedding_loss "
                        "triplet_margin_loss triplet_margin_with_distance_loss poisson_nll_loss gaussian_nll_loss",
    "class_losses": "multilabel_soft_margin_loss multi_margin_loss multilabel_margin_loss",
    "bilinear": "bilinear",
    "embedding_bags": "embedding_bag",
    "unpooling": "max_unpool1d max_unpool2d max_unpool3d",
    "lp_pooling": "lp_pool1d lp_pool2d lp_pool3d",
    "channel_shuffle": "channel_shuffle",
    "ctc": "ctc_loss",
}
PADS = [f"{kind}Pad{n}d" for kind in ("Zero", "Constant", "Reflection", "Replication", "Circular") for n in (1, 2, 3)]
MODULES = {
    "layers": "Conv1d ConvTranspose1d ConvTranspose2d Conv3d ConvTranspose3d",
    "pooling": "MaxPool1d AvgPool1d AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveMaxPool1d AdaptiveMaxPool2d "
               "MaxPool3d AvgPool3d AdaptiveAvgPool3d AdaptiveMaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d "
               "LPPool1d LPPool2d LPPool3d",
    "recurrent": "RNN LSTM GRU RNNBase",
    "recurrent_cells": "RNNCell LSTMCell GRUCell RNNCellBase",
    "attention": "MultiheadAttention",
    "transformer": "TransformerEncoderLayer TransformerEncoder TransformerDecoderLayer TransformerDecoder Transformer",
    "activation": "Hardshrink Softshrink RReLU Softmax2d",
    "dropout": "Dropout Dropout1d Dropout2d Dropout3d AlphaDropout FeatureAlphaDropout",
    "normalization": "InstanceNorm1d InstanceNorm2d RMSNorm LocalResponseNorm BatchNorm3d InstanceNorm3d",
    "distance": "CosineSimilarity PairwiseDistance",
    "padding_layers": " ".join(PADS),
    "resampling": "Upsample UpsamplingNearest2d UpsamplingBilinear2d PixelShuffle PixelUnshuffle Unfold Fold",
    "loss": "MarginRankingLoss HingeEmbeddingLoss SoftMarginLoss CosineEmbeddingLoss TripletMarginLoss "
            "TripletMarginWithDistanceLoss PoissonNLLLoss GaussianNLLLoss MultiLabelSoftMarginLoss MultiMarginLoss "
            "MultiLabelMarginLoss CTCLoss",
    "bilinear": "Bilinear",
    "embedding_bag": "EmbeddingBag",
    "channel_shuffle": "ChannelShuffle",
}
FUNCTION_NAMES = [(module, name) for module, names in FUNCTIONS.items() for name in names.split()]
MODULE_NAMES = [(module, name) for module, names in MODULES.items() for name in names.split()]


@pytest.mark.parametrize(("module", "name"), FUNCTION_NAMES, ids=[name for _, name in FUNCTION_NAMES])
def test_each_functional_name_is_its_ops_function_with_the_tensor_check(module: str, name: str) -> None:
    defined = getattr(importlib.import_module(f"actorgrad.ops.{module}"), name)
    assert name in F.__all__
    assert getattr(F, name).__wrapped__ is defined  # every one takes a Tensor first, so every one is checked
    assert getattr(F, name).__code__.co_name == "checked"


@pytest.mark.parametrize(("module", "name"), MODULE_NAMES, ids=[name for _, name in MODULE_NAMES])
def test_each_nn_name_is_the_class_its_module_defines(module: str, name: str) -> None:
    assert name in nn.__all__
    assert getattr(nn, name) is getattr(importlib.import_module(f"actorgrad.nn.{module}"), name)


def test_pixel_shuffle_and_unshuffle_are_top_level_names_as_in_torch() -> None:
    x = ag.arange(16.0).reshape(1, 4, 2, 2)
    assert ag.pixel_shuffle.__wrapped__ is ag.ops.resampling.pixel_shuffle
    np.testing.assert_array_equal(ag.pixel_unshuffle(ag.pixel_shuffle(x, 2), 2).numpy(), x.numpy())
    assert ag.ones(2, 3).unfold(1, 2, 1).shape == (2, 2, 2)  # Tensor.unfold stays the sliding window


@pytest.mark.parametrize(("call", "text"), [
    (lambda: F.interpolate(1.0, scale_factor=2),
     "interpolate(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: F.cosine_similarity(ag.ones(2, 3), 1.0),
     "cosine_similarity(): argument 'x2' (position 2) must be Tensor, not float"),
    (lambda: F.margin_ranking_loss(ag.ones(2), ag.ones(2), 1.0),
     "margin_ranking_loss(): argument 'target' (position 3) must be Tensor, not float"),
    (lambda: F.conv_transpose2d(ag.ones(1, 1, 2, 2), 1.0),
     "conv_transpose2d(): argument 'weight' (position 2) must be Tensor, not float"),
    (lambda: ag.pixel_shuffle(1.0, 2), "pixel_shuffle(): argument 'input' (position 1) must be Tensor, not float"),
    (lambda: F.poisson_nll_loss(ag.ones(2), 2.0),
     "poisson_nll_loss(): argument 'target' (position 2) must be Tensor, not float"),
])
def test_a_non_tensor_gets_pytorchs_type_error(call: Callable, text: str) -> None:
    with pytest.raises(TypeError, match="^" + re.escape(text)):
        call()


def test_recurrent_layers_run_through_nn() -> None:
    x = ag.rand(5, 2, 4)  # (sequence, batch, features)
    output, (h, c) = nn.LSTM(4, 3)(x)
    assert (output.shape, h.shape, c.shape) == ((5, 2, 3), (1, 2, 3), (1, 2, 3))
    output, h = nn.GRU(4, 3, num_layers=2, batch_first=True)(x)
    assert (output.shape, h.shape) == ((5, 2, 3), (2, 5, 3))
    assert nn.RNNCell(4, 3)(x[0]).shape == (2, 3)
    assert isinstance(nn.LSTM(4, 3), nn.RNNBase) and isinstance(nn.GRUCell(4, 3), nn.RNNCellBase)


def test_attention_and_transformer_run_through_nn() -> None:
    x = ag.rand(2, 5, 8)
    attended, weights = nn.MultiheadAttention(8, 2, batch_first=True)(x, x, x)
    assert (attended.shape, weights.shape) == ((2, 5, 8), (2, 5, 5))
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    assert nn.TransformerEncoder(layer, 2)(x).shape == (2, 5, 8)
    assert F.scaled_dot_product_attention(x, x, x).shape == (2, 5, 8)


def test_resampling_padding_and_distances_run_through_nn_and_functional() -> None:
    image = ag.arange(4.0).reshape(1, 1, 2, 2)
    np.testing.assert_array_equal(F.interpolate(image, scale_factor=2).numpy()[0, 0],
                                  [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3], [2, 2, 3, 3]])
    assert nn.UpsamplingBilinear2d(scale_factor=2)(image).shape == (1, 1, 4, 4)
    padded = nn.ZeroPad2d(1)(image)
    assert padded.shape == (1, 1, 4, 4) and padded.sum().item() == 6.0 and padded[0, 0, 0].tolist() == [0.0] * 4
    assert nn.ReflectionPad1d(1)(ag.arange(3.0).reshape(1, 1, 3)).tolist() == [[[1.0, 0.0, 1.0, 2.0, 1.0]]]
    columns = F.unfold(image, 1)
    assert columns.shape == (1, 1, 4) and nn.Fold((2, 2), 1)(columns).tolist() == image.tolist()
    assert nn.PixelUnshuffle(2)(image).shape == (1, 4, 1, 1)
    a, b = ag.tensor([[1.0, 0.0], [1.0, 1.0]]), ag.tensor([[2.0, 0.0], [-1.0, -1.0]])
    np.testing.assert_allclose(F.cosine_similarity(a, b).numpy(), [1.0, -1.0], rtol=1e-6)
    np.testing.assert_allclose(nn.PairwiseDistance()(a, b).numpy(), [1.0, np.sqrt(8.0)], rtol=1e-5)


def test_layers_and_norms_run_through_nn() -> None:
    assert nn.Conv1d(2, 3, 3)(ag.rand(1, 2, 6)).shape == (1, 3, 4)
    assert nn.ConvTranspose2d(2, 3, 3, stride=2)(ag.rand(1, 2, 4, 4)).shape == (1, 3, 9, 9)
    assert nn.AdaptiveAvgPool2d(1)(ag.rand(1, 2, 5, 5)).shape == (1, 2, 1, 1)
    assert nn.MaxPool1d(2)(ag.rand(1, 2, 6)).shape == (1, 2, 3)
    normed = nn.InstanceNorm1d(2)(ag.rand(3, 2, 5))
    np.testing.assert_allclose(normed.numpy().mean(axis=-1), 0.0, atol=1e-6)
    assert nn.RMSNorm(4)(ag.rand(2, 4)).shape == (2, 4)
    assert nn.Hardshrink(1.0)(ag.tensor([-2.0, 0.5, 2.0])).tolist() == [-2.0, 0.0, 2.0]
    assert F.softshrink(ag.tensor([-2.0, 0.25, 2.0])).tolist() == [-1.5, 0.0, 1.5]


def test_a_loss_module_backpropagates_through_nn() -> None:
    x1 = ag.tensor([1.0, 2.0], requires_grad=True)
    x2 = ag.tensor([2.0, 0.0])
    loss = nn.MarginRankingLoss(margin=0.5)(x1, x2, ag.tensor([1.0, 1.0]))
    assert loss.item() == pytest.approx(0.75)  # max(0, -(1 - 2) + 0.5) = 1.5 and 0, averaged
    loss.backward()
    assert x1.grad.tolist() == [-0.5, 0.0]
    scores = ag.tensor([[0.1, 0.2, 0.4]], requires_grad=True)
    nn.MultiMarginLoss()(scores, ag.tensor([2])).backward()
    assert scores.grad.shape == (1, 3)
