"""Optimizer: parameter groups with per-group options, per-parameter state, and the step loop shared by all.

`step()` walks every parameter that has a gradient and hands its raw arrays to the subclass's `_update`,
which changes the parameter's array in place. Before its first update a parameter gets a private copy of its
array, so tensors that shared it (a `state_dict()` snapshot, the tensor a Parameter was made from, a read-only
view) keep their values. Each update bumps the parameter's version, as PyTorch's in-place update does, so a
graph that saved the parameter before the step refuses to run backward. A complex parameter is handed over as
its real view, (re, im) pairs along a new last dim, as PyTorch updates it; its state stays complex in between.
Step and state-dict hooks (`optimizer_hooks`) run around `step`, `state_dict` and `load_state_dict`.
"""

from __future__ import annotations

import copy
import warnings
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from actorgrad.devices import Device
from actorgrad.grad_mode import enable_grad, no_grad
from actorgrad.hooks import RemovableHandle
from actorgrad.nn.module import zero_grad_of
from actorgrad.ops.spectral import complex_dtype, real_dtype
from actorgrad.optim.optimizer_hooks import (
    HOOK_DICTS,
    add_hook,
    register_optimizer_step_post_hook,
    register_optimizer_step_pre_hook,
    with_step_hooks,
)
from actorgrad.optim.options import check_fused_params, check_honoured_options
from actorgrad.tensor import Tensor
from actorgrad.version_counter import bump_version

# The global step hooks live here too, where PyTorch's torch.optim.optimizer has them.
__all__ = ["Optimizer", "register_optimizer_step_post_hook", "register_optimizer_step_pre_hook"]


class _RequiredParameter:
    """The default of an option every parameter group must give (`def __init__(self, params, lr=required)`)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()


class Optimizer:
    """Base class: subclasses pass their option defaults and define `_update(group, param, grad, state)`."""

    # Options a loaded group may lack (saved by an older version) and the values they get, as each PyTorch
    # optimizer's __setstate__ fills them in.
    _loaded_group_defaults: dict[str, Any] = {}
    # PyTorch's message where an optimizer refuses complex parameters; None: they are updated as real pairs.
    _complex_error: str | None = None

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], defaults: dict[str, Any]) -> None:
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, but got "
                f"{type(params).__name__} of shape {tuple(params.shape)}"
            )
        self.defaults = defaults
        for hooks in HOOK_DICTS:
            setattr(self, hooks, OrderedDict())
        self.state: defaultdict[Tensor, dict] = defaultdict(dict)
        self.param_groups: list[dict] = []
        self._owned: dict[Tensor, Any] = {}
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own options; options it leaves out take the defaults."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of tensors in "
                "sets will change between runs. Please use a list instead."
            )
        entries = list(params)
        # (name, parameter) pairs, as `module.named_parameters()` gives them, put the names in "param_names".
        names = [entry[0] for entry in entries if isinstance(entry, tuple)]
        params = [entry[1] if isinstance(entry, tuple) else entry for entry in entries]
        if names and len(names) != len(params):
            raise ValueError("all optimizer params should be with/without names. Some param names are missing")
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is {_typename(param)}")
            if not param.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
        if len({id(p) for p in params}) != len(params):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will cause an error; "
                "see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        group = {**param_group, "params": params}
        if names:
            group["param_names"] = names
        for existing in self.param_groups:
            if ("param_names" in group) != ("param_names" in existing):
                raise ValueError(
                    "all optimizer param groups should be with/without names. cannot add param group "
                    f"{'with' if names else 'without'} names to the optimizer"
                )
        seen = {id(p) for group in self.param_groups for p in group["params"]}
        if any(id(p) in seen for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        for name, default in self.defaults.items():  # in PyTorch's key order: the group's own options first
            group.setdefault(name, default)
        check_honoured_options(group)
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for param in group["params"]:
                zero_grad_of(param, set_to_none)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own `step` runs the step hooks too."""
        super().__init_subclass__(**kwargs)
        if "step" in cls.__dict__:
            cls.step = with_step_hooks(cls.step)

    @with_step_hooks
    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """One update of every parameter with a gradient; `closure` (re)computes the loss first and is returned."""
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                self._check_group(group)
                for param in group["params"]:
                    if param.grad is not None:
                        state = self.state.get(param, {})  # no empty entry for a parameter whose rule keeps none
                        if param._data.dtype.kind == "c":
                            self._update_complex(group, param, state)
                        else:
                            self._update(group, self._own_array(param), param.grad._data, state, param._device)
                        if state:
                            self.state[param] = state
                        bump_version(param)
        return loss

    def _check_group(self, group: dict) -> None:
        """Refuse a group before updating any of it where it has a complex parameter to update and the optimizer
        refuses those (PyTorch's Adafactor), or, under `fused`, any but real floating-point ones."""
        if self._complex_error is not None and any(
            p.grad is not None and p._data.dtype.kind == "c" for p in group["params"]
        ):
            raise RuntimeError(self._complex_error)
        check_fused_params(group)

    def _update_complex(self, group: dict, param: Tensor, state: dict) -> None:
        """Update a complex parameter as PyTorch does: as its real view (re, im pairs along a new last dim), with
        its state viewed the same way during the update and kept complex (the parameter's shape) in between."""
        device = param._device
        xp = device.xp
        pairs_shape = (*param.shape, 2)
        originals = {k: v for k, v in state.items() if isinstance(v, Tensor) and v._data.dtype.kind == "c"}
        for key, value in originals.items():  # contiguous (a copy only where needed), as a dtype view needs
            state[key] = Tensor(real_pairs(_contiguous(xp, value._data)), device=device)
        grad = real_pairs(_contiguous(xp, param.grad._data))
        self._update(group, real_pairs(self._own_array(param)), grad, state, device)
        for key, value in state.items():
            if isinstance(value, Tensor) and value._data.dtype.kind == "f" and value.shape == pairs_shape:
                values = complex_from_pairs(device.xp, value._data)
                if key in originals:
                    originals[key]._data[...] = values  # in place: a Tensor the caller holds sees the step
                    state[key] = originals[key]
                else:
                    state[key] = Tensor(values, device=device)

    def _update(self, group: dict, param: Any, grad: Any, state: dict, device: Device) -> None:
        """Update `param` (the parameter's array) in place from `grad`; new state tensors go on `device`."""
        raise NotImplementedError(f"{type(self).__name__} must define _update")

    def _own_array(self, param: Tensor) -> Any:
        """The parameter's array, replaced once by a private writeable copy so in-place updates touch no other
        tensor (and again if something else gave the parameter a new array since). The copy keeps the layout (a
        transposed or channels-last parameter stays so, as PyTorch's updated in place)."""
        data = param._data
        if self._owned.get(param) is not data:
            data = data.copy(order="K")
            param._data = data
            self._owned[param] = data
        return data

    # -- saving and loading ----------------------------------------------------------------------------------
    def _ordered_params(self) -> list[Tensor]:
        return [p for group in self.param_groups for p in group["params"]]

    def state_dict(self) -> dict:
        """Options and state, with parameters replaced by their position in the groups; state arrays are
        copied, so later steps leave the result as it is. State dict hooks run before and after (a post hook's
        result, where not None, is returned instead)."""
        for pre_hook in self._optimizer_state_dict_pre_hooks.values():
            pre_hook(self)
        index = {id(p): i for i, p in enumerate(self._ordered_params())}
        groups = [
            {**{k: v for k, v in group.items() if k != "params"}, "params": [index[id(p)] for p in group["params"]]}
            for group in self.param_groups
        ]
        state = {}
        for p, s in self.state.items():
            if not isinstance(p, Tensor):  # state a loaded dict held for none of ours: kept as it is, as in PyTorch
                state[p] = s
            elif id(p) in index:
                state[index[id(p)]] = _copy_state(s)
        state_dict = {"state": state, "param_groups": groups}
        for post_hook in self._optimizer_state_dict_post_hooks.values():
            result = post_hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore options and state saved by `state_dict()` from an optimizer over parameters of the same shapes;
        a load pre hook may return a state dict to load instead (it gets a shallow copy), post hooks run after."""
        state_dict = state_dict.copy()
        for pre_hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = pre_hook(self, state_dict)
            if result is not None:
                state_dict = result
        saved_groups = copy.deepcopy(state_dict["param_groups"])  # the optimizer shares no Tensor option with it
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(s["params"]) != len(g["params"]) for s, g in zip(saved_groups, self.param_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of optimizer's group"
            )
        # The saved groups' ids name the parameters in order (whatever the ids are); state under an id no group
        # names is kept as it is, as PyTorch keeps it.
        params = dict(zip(
            (i for saved in saved_groups for i in saved["params"]), self._ordered_params(), strict=True
        ))
        self.state = defaultdict(dict)
        for i, saved in state_dict["state"].items():
            if i in params:
                self.state[params[i]] = _copy_state(saved, params[i])
            else:
                self.state[i] = saved
        # As PyTorch's __setstate__: loading gives the defaults a `differentiable` (False) where they lack one, so
        # a group added afterwards (to Adafactor or LBFGS) has that key too.
        self.defaults.setdefault("differentiable", False)
        self.param_groups = [self._loaded_group(saved, group) for saved, group in zip(saved_groups, self.param_groups)]
        self._fill_loaded()
        for post_hook in self._optimizer_load_state_dict_post_hooks.values():
            post_hook(self)

    def _fill_loaded(self) -> None:
        """Bring loaded state up to date (what PyTorch's __setstate__ does): subclasses convert what an older
        version saved differently."""

    # -- hooks -----------------------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)` before each step; it may return (new_args, new_kwargs) for the step."""
        return add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """`hook(optimizer, args, kwargs)` after each step."""
        return add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer)` before `state_dict()` builds its result."""
        return add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer, state_dict)` on `state_dict()`'s result; returning a dict replaces it."""
        return add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer, state_dict)` before loading; returning a dict loads that instead."""
        return add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """`hook(optimizer)` after loading."""
        return add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)

    def _loaded_group(self, saved: dict, current: dict) -> dict:
        """A group's options become the saved ones (none kept from before, but the current "param_names" where
        the saved group has none), in the saved order, as PyTorch replaces them."""
        group = {k: current["params"] if k == "params" else v for k, v in saved.items()}
        if "param_names" in current:
            group.setdefault("param_names", current["param_names"])
        for name, default in self._loaded_group_defaults.items():
            group.setdefault(name, default)
        return group

    def __getstate__(self) -> dict[str, Any]:
        """What a copy or a pickle keeps: not a scheduler's wrapper of `step` (bound to this optimizer, so a copy
        would step the original) nor whether it ran, nor the hooks, as PyTorch's `__getstate__` leaves them out."""
        dropped = {"step", "_opt_called", *HOOK_DICTS}
        return {key: value for key, value in self.__dict__.items() if key not in dropped}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for hooks in HOOK_DICTS:
            setattr(self, hooks, OrderedDict())

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines += [""] * (i > 0) + [f"Parameter Group {i}"]
            lines += [f"    {key}: {group[key]}" for key in sorted(group) if key != "params"]
        return "\n".join([*lines, ")"])


def _typename(value: Any) -> str:
    """A value's type as PyTorch's typename names it: qualified by its module unless a builtin (numpy.ndarray)."""
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _contiguous(xp: Any, array: Any) -> Any:
    """`array` C-contiguous (a copy only where needed) and of its own shape: `ascontiguousarray` makes a 0-d
    array 1-d, which would give a 0-d complex parameter's pairs a dim of its own."""
    return xp.ascontiguousarray(array).reshape(array.shape)


def real_pairs(z: Any) -> Any:
    """A complex array's (re, im) pairs along a new last dim, viewing its memory."""
    return z[..., None].view(real_dtype(z.dtype))


def complex_from_pairs(xp: Any, pairs: Any) -> Any:
    """Real (re, im) pairs along the last dim as a complex array without that dim (a view where the layout allows)."""
    return xp.ascontiguousarray(pairs).view(complex_dtype(pairs.dtype))[..., 0]


def _copy_state(state: dict, param: Tensor | None = None) -> dict:
    """One parameter's state with each Tensor's array copied (in lists too, as LBFGS keeps its history): on its
    own device, or, given the `param` it is loaded for, on that parameter's device and, for a floating-point one,
    in its dtype (as PyTorch loads optimizer state: a complex parameter's real counters such as NAdam's
    `mu_product` stay real; a `step` count keeps its own dtype and device)."""
    return {k: _copy_value(v, None if k == "step" else param) for k, v in state.items()}


def _copy_value(value: Any, param: Tensor | None) -> Any:
    if isinstance(value, list):
        return [_copy_value(v, param) for v in value]
    if not isinstance(value, Tensor):
        return value
    if param is None:
        return Tensor(value._data.copy(), device=value._device)
    where = param._device
    dtype = param.dtype if param.is_floating_point() else value.dtype
    return Tensor(where.asarray(value._data).astype(dtype), device=where)  # a copy: loading shares nothing
