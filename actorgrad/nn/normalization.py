"""BatchNorm1d/2d/3d (and SyncBatchNorm, of any rank): batch statistics while training (folded into running
buffers), running statistics in eval; the arithmetic is `nn.functional.batch_norm`'s. InstanceNorm1d/2d/3d: the same
buffers and parameters, statistics per sample and channel. GroupNorm: statistics per sample and group of channels,
in training and eval alike. RMSNorm and LocalResponseNorm: no statistics kept."""

from __future__ import annotations

from typing import Any

from actorgrad.creation import empty, ones, zeros
from actorgrad.nn import functional as F
from actorgrad.nn import init
from actorgrad.nn.module import Module
from actorgrad.nn.parameter import Parameter
from actorgrad.ops.normalization import instance_norm, local_response_norm, rms_norm
from actorgrad.tensor import Tensor, int64
from actorgrad.tensor_construction import tensor
from actorgrad.user_warnings import warn


def _register_affine(module: Module, channels: int, affine: bool, bias: bool, factory: dict) -> None:
    """The per-channel scale and shift, `weight` and `bias` (None when not affine, `bias` None without bias)."""
    module.register_parameter("weight", Parameter(empty(channels, **factory)) if affine else None)
    module.register_parameter("bias", Parameter(empty(channels, **factory)) if affine and bias else None)


def _reset_affine(module: Module) -> None:
    """Scale 1 and shift 0, so a fresh layer only normalises."""
    if module.affine:
        init.ones_(module.weight)
        if module.bias is not None:
            init.zeros_(module.bias)


class _NormBase(Module):
    """What the batch and instance norms share: per-channel (dim 1) affine parameters and running statistics.
    `momentum=None` makes the running statistics a cumulative average (factor 1 / num_batches_tracked);
    `track_running_stats=False` keeps no buffers. The two families are siblings, as PyTorch's."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        factory = {"dtype": dtype, "device": device}
        self.num_features = num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        _register_affine(self, num_features, affine, bias, factory)
        tracked = track_running_stats
        self.register_buffer("running_mean", zeros(num_features, **factory) if tracked else None)
        self.register_buffer("running_var", ones(num_features, **factory) if tracked else None)
        self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=device) if tracked else None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        _reset_affine(self)

    def _check_input_dim(self, input: Tensor) -> None:
        raise NotImplementedError

    # Version 2 added `num_batches_tracked`; the state dict records the version as PyTorch's does.
    _version = 2

    def _upgrade_state_dict(self, state_dict: dict, prefix: str, version: int | None) -> None:
        """A checkpoint from before version 2 (or of unknown version) without `num_batches_tracked` loads,
        keeping the module's count, as in PyTorch."""
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            count = self.num_batches_tracked
            state_dict[key] = tensor(0, dtype=int64) if count is None else count

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
            f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}"
        )


class _BatchNorm(_NormBase):
    """Batch statistics while training (the running ones updated when tracked), running statistics in eval."""

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        # The batch's statistics in training, and in eval when there are no running ones; the buffers are passed
        # where they are updated (training, tracked) or used (eval).
        use_batch = self.training or (self.running_mean is None and self.running_var is None)
        pass_buffers = not self.training or self.track_running_stats
        return F.batch_norm(
            input, self.running_mean if pass_buffers else None, self.running_var if pass_buffers else None,
            self.weight, self.bias, use_batch, factor, self.eps,
        )


class BatchNorm1d(_BatchNorm):
    """Over (N, C) or (N, C, L) inputs."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class BatchNorm2d(_BatchNorm):
    """Over (N, C, H, W) inputs."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 4:
            raise ValueError(f"expected 4D input (got {input.dim()}D input)")


class BatchNorm3d(_BatchNorm):
    """Over (N, C, D, H, W) inputs."""

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() != 5:
            raise ValueError(f"expected 5D input (got {input.dim()}D input)")


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over (N, C, *) inputs. PyTorch gathers the batch statistics across the processes of a group;
    actorgrad runs in one process, so they are this batch's, as in PyTorch's own fallback when no process group is
    running. `process_group` is kept for code that passes one."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, process_group: Any = None, device: Any = None, dtype: Any = None,
                 *, bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")
        if input.size(1) == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """`module` with each BatchNorm in it (itself included) replaced by a SyncBatchNorm that shares its
        parameters, buffers and mode, as PyTorch's; a BatchNorm `module` gives a new layer, any other is changed
        in place and returned."""
        converted = module
        if isinstance(module, _BatchNorm):
            converted = cls(module.num_features, module.eps, module.momentum, module.affine,
                            module.track_running_stats, process_group, bias=module.bias is not None)
            if module.affine:
                converted.weight = module.weight
                converted.bias = module.bias
            converted.running_mean = module.running_mean
            converted.running_var = module.running_var
            converted.num_batches_tracked = module.num_batches_tracked
            converted.training = module.training
            if hasattr(module, "qconfig"):
                converted.qconfig = module.qconfig
        for name, child in module.named_children():
            converted.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return converted


class GroupNorm(Module):
    """Normalises each sample's channels in num_groups groups, then scales and shifts per channel (when affine)."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True, device: Any = None,
                 dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        factory = {"dtype": dtype, "device": device}
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        _register_affine(self, num_channels, affine, bias, factory)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        _reset_affine(self)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class _InstanceNorm(_NormBase):
    """Normalises each sample's channels over their positions. The running statistics, when tracked, are the
    mean over the batch of its per-sample ones, and are used in eval; an unbatched input is taken as a batch of
    one. `num_batches_tracked` is kept but never counted, as in PyTorch."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    unbatched_dims = 0

    def forward(self, input: Tensor) -> Tensor:
        self._check_input_dim(input)
        feature_dim = input.dim() - self.unbatched_dims
        if input.size(feature_dim) != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match num_features "
                                 f"({self.num_features}), but got: {input.size(feature_dim)}.")
            warn(f"input's size at dim={feature_dim} does not match num_features. You can silence this warning by "
                 "not passing in num_features, which is not used because affine=False")
        unbatched = input.dim() == self.unbatched_dims
        out = instance_norm(
            input.unsqueeze(0) if unbatched else input, self.running_mean, self.running_var, self.weight, self.bias,
            self.training or not self.track_running_stats, 0.0 if self.momentum is None else self.momentum, self.eps,
        )
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """Over (N, C, L) or (C, L) inputs."""

    unbatched_dims = 2

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.dim()}D input)")


class InstanceNorm2d(_InstanceNorm):
    """Over (N, C, H, W) or (C, H, W) inputs."""

    unbatched_dims = 3

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in (3, 4):
            raise ValueError(f"expected 3D or 4D input (got {input.dim()}D input)")


class InstanceNorm3d(_InstanceNorm):
    """Over (N, C, D, H, W) or (C, D, H, W) inputs."""

    unbatched_dims = 4

    def _check_input_dim(self, input: Tensor) -> None:
        if input.dim() not in (4, 5):
            raise ValueError(f"expected 4D or 5D input (got {input.dim()}D input)")


class RMSNorm(Module):
    """x / sqrt(mean(x^2) + eps) over the trailing `normalized_shape` dims, times a learned `weight` (ones at
    first) when `elementwise_affine`; eps None is the dtype's machine epsilon."""

    def __init__(self, normalized_shape: int | tuple[int, ...] | list[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype)) if elementwise_affine else None
        self.register_parameter("weight", weight)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        return rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    """Each channel divided by (k + alpha * the mean square over `size` neighbouring channels) ** beta."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
