"""PyTorch's refusals of in-place changes (of leaves, views of leaves, views made in no_grad mode, pieces of split,
custom Functions' views) in its words, as templates: `{what}` says whether the view itself is being changed or is
used after its base changed (BASE_CHANGED); `{nr}` and `{name}` name the view's output and node."""

from __future__ import annotations

LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF = "a view of a leaf Variable that requires grad is being used in an in-place operation."
# `what`: "is being modified inplace" (the view itself), or BASE_CHANGED (a later use of it: inplace_recording)
NO_GRAD_TEMPLATE = (
    "A view was created in no_grad mode and {what} with grad mode enabled. Given that this use case is ambiguous and "
    "error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both "
    "inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace "
    "to be tracked)."
)
NO_GRAD_OF_VIEW_TEMPLATE = NO_GRAD_TEMPLATE.replace(
    "A view was created", "Output {nr} of {name} is a view of a view which was created"
)
NO_GRAD_VIEW = NO_GRAD_TEMPLATE.format(what="is being modified inplace")
NO_GRAD_VIEW_OF_VIEW = NO_GRAD_OF_VIEW_TEMPLATE.replace("{what}", "is being modified inplace")
MULTI_OUTPUT = (
    "Output {nr} of {name} is a view and {what}. This view is the output of a function that returns multiple "
    "views. Such functions do not allow the output views to be modified inplace. You should replace the inplace "
    "operation by an out-of-place one."
)
CUSTOM_FUNCTION = (
    "Output {nr} of {name} is a view and {what}. This view was created inside a custom Function (or because an input "
    "was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated "
    "with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by "
    "cloning the output of the custom Function."
)
# A piece of split, chunk or unbind made without a history, or a view of one: PyTorch joins the two texts
MULTI_OUTPUT_WITHOUT_HISTORY = MULTI_OUTPUT.replace(
    "Output {nr} of {name} is a view and {what}.",
    "A view was created in no_grad mode and {what} with grad mode enabled.",
)
BASE_CHANGED = "its base or another view of its base has been modified inplace"
STALE_DTYPE_VIEW = (
    "a view of its base as another dtype (view_as_real, view_as_complex, real, imag), made without a history, is used "
    "after an in-place change of its base that needs a gradient; make the view again after the change"
)
