"""Models people train: a small CNN and a one-block transformer fit synthetic data (their loss falls).

The transformer trains inside a trio app with `await actorgrad.backward(...)`, the CNN with `loss.backward()`.
"""

import math

import numpy as np

import actorgrad as ag
from actorgrad import nn
from actorgrad.nn import functional as F


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.conv2 = nn.Conv2d(4, 8, 3, padding=1)
        self.head = nn.Linear(8 * 2 * 2, 4)

    def forward(self, x: ag.Tensor) -> ag.Tensor:
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.head(x.flatten(1))


def blob_images(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """8x8 noise images with a bright 2x2 blob in the quadrant that is the label."""
    images = rng.normal(0, 0.3, (n, 1, 8, 8)).astype(np.float32)
    labels = rng.integers(0, 4, n)
    for quadrant in range(4):
        r, c = divmod(quadrant, 2)
        images[labels == quadrant, 0, 4 * r + 1 : 4 * r + 3, 4 * c + 1 : 4 * c + 3] += 2.0
    return images, labels


def test_a_small_cnn_learns_where_the_blob_is():
    ag.manual_seed(0)
    images, labels = blob_images(64, np.random.default_rng(0))
    x, y = ag.tensor(images), ag.tensor(labels)
    model = SmallCNN()
    optimizer = ag.optim.Adam(model.parameters(), lr=0.02)
    losses = []
    for _ in range(25):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert all(p.grad is not None for p in model.parameters())
    assert losses[-1] < 0.5 * losses[0], losses


class TransformerBlock(nn.Module):
    """Token and position embeddings, causal self-attention, an MLP, pre-LayerNorm, residuals, a vocabulary head."""

    def __init__(self, vocab: int, width: int, length: int) -> None:
        super().__init__()
        self.width = width
        self.embed = nn.Embedding(vocab, width)
        self.position = nn.Parameter(ag.randn(length, width) * 0.1)
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.project = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))
        self.head = nn.Linear(width, vocab)
        self.future = ag.tensor(np.triu(np.ones((length, length), dtype=bool), 1))

    def forward(self, tokens: ag.Tensor) -> ag.Tensor:
        x = self.embed(tokens) + self.position
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.width)
        attention = scores.masked_fill(self.future, float("-inf")).softmax(-1)
        x = x + self.project(attention @ v)
        x = x + self.mlp(self.norm2(x))
        return self.head(x)


async def test_a_transformer_block_learns_to_count_inside_a_trio_app():
    ag.manual_seed(1)
    vocab, length = 7, 8
    starts = np.random.default_rng(1).integers(0, vocab, (16, 1))
    sequences = (starts + np.arange(length + 1)) % vocab  # each next token is the last one plus one
    tokens, targets = ag.tensor(sequences[:, :-1]), ag.tensor(sequences[:, 1:])
    model = TransformerBlock(vocab, 16, length)
    optimizer = ag.optim.AdamW(model.parameters(), lr=0.01)
    losses = []
    for _ in range(30):
        optimizer.zero_grad()
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
        await ag.backward(loss)
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0], losses
