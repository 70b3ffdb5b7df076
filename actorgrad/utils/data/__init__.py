"""`actorgrad.utils.data`: datasets, samplers, collation and a DataLoader, as torch.utils.data's (`num_workers`
loads on worker threads, with PyTorch's multi-process semantics)."""

from actorgrad.utils.data.collate import default_collate, default_convert
from actorgrad.utils.data.dataloader import DataLoader, get_worker_info
from actorgrad.utils.data.dataset import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)
from actorgrad.utils.data.sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset", "RandomSampler",
    "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler", "TensorDataset",
    "WeightedRandomSampler", "default_collate", "default_convert", "get_worker_info", "random_split",
]
