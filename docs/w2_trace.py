"""The W2 backward (eight independent tanh(h @ W) branches) on two workers, for the README's timeline:

    actorgrad trace -o w2.json --png docs/w2_timeline.png docs/w2_trace.py
"""

import numpy as np
from threadpoolctl import threadpool_limits

import actorgrad as ag

rng = np.random.default_rng(2)
X = ag.tensor(rng.normal(size=(256, 512)) * 0.1)
Ws = [ag.tensor(rng.normal(size=(512, 512)) * 0.04, requires_grad=True) for _ in range(8)]
sums = []
for W in Ws:
    h = X
    for _ in range(4):
        h = (h @ W).tanh()
    sums.append(h.sum())
loss = sum(sums[1:], sums[0])
ag.set_num_workers(2)
with threadpool_limits(1, user_api="blas"):  # one BLAS thread per kernel: the workers give the parallelism
    loss.backward()
