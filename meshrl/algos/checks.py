"""Cheap input checks run at the entry of every public function in `meshrl.algos`.

A NaN in a reward or a log-prob silently poisons a whole update; a shape mix-up between
`[batch]` and `[batch, response_len]` silently broadcasts. Both are caught here with a
message that names the tensor, the training step and, where known, the prompt groups
involved, so the bad group can be found in the traces.
"""

from __future__ import annotations

import torch

from meshrl.registry import UnknownNameError  # noqa: F401  (raised by the algos lookups)


class NonFiniteError(ValueError):
    """A tensor holds NaN or inf. Carries `name`, `step`, `rows` and `group_ids`."""

    def __init__(self, message: str, *, name: str, step: int | None, rows: list[int], group_ids: list[int] | None):
        super().__init__(message)
        self.name, self.step, self.rows, self.group_ids = name, step, rows, group_ids


class ShapeError(ValueError):
    """Tensors whose shapes do not fit together. The message lists every tensor's shape."""


def check_finite(
    name: str, tensor: torch.Tensor | None, group_ids: torch.Tensor | None = None, step: int | None = None
) -> None:
    """Raise `NonFiniteError` if `tensor` holds NaN/inf; name its rows and their group ids.

    Rows are indices along dim 0 (the batch); `group_ids[row]` is reported for each bad row.
    `None` tensors (optional inputs) pass.
    """
    if tensor is None or not tensor.is_floating_point() or bool(torch.isfinite(tensor).all()):
        return
    bad = ~torch.isfinite(tensor)
    rows = bad.reshape(bad.shape[0], -1).any(dim=1).nonzero().flatten() if bad.dim() else None
    rows_list = rows.tolist() if rows is not None else []
    groups = None
    if group_ids is not None and rows is not None:
        groups = sorted(set(group_ids[rows].tolist()))
    where = f" at step {step}" if step is not None else ""
    in_groups = f", group ids {groups}" if groups is not None else ""
    message = (
        f"{name} has {int(bad.sum())} non-finite value(s) (NaN/inf){where}: "
        f"rows {rows_list[:20]}{in_groups}. Fix the producer of {name!r} "
        f"(fill padding with 0, not NaN) or drop these groups."
    )
    raise NonFiniteError(message, name=name, step=step, rows=rows_list, group_ids=groups)


def _spec_dims(spec: str | tuple) -> tuple:
    return tuple(spec.split()) if isinstance(spec, str) else tuple(spec)


def check_shapes(**tensors) -> None:
    """Check that tensors fit together; raise `ShapeError` naming each tensor and its shape.

    Each keyword is either a tensor or `(tensor, spec)`, where spec names the dims, e.g.
    `"B T"` or `("B", 5)`. Named dims must agree across all tensors; integer dims must match
    exactly. Plain tensors (no spec) must all have the same shape. `None` tensors are skipped
    (optional inputs).

        check_shapes(rewards=(r, "B"), response_mask=(m, "B T"), values=(v, "B T"))
    """
    given = {k: v for k, v in tensors.items() if v is not None and not (isinstance(v, tuple) and v[0] is None)}
    bound: dict[str, int] = {}
    plain_shape = None
    for name, item in given.items():
        tensor, spec = item if isinstance(item, tuple) else (item, None)
        if spec is None:
            plain_shape = tuple(tensor.shape) if plain_shape is None else plain_shape
            if tuple(tensor.shape) != plain_shape:
                _shape_error(given, f"{name} differs from the others")
            continue
        dims = _spec_dims(spec)
        if tensor.dim() != len(dims):
            _shape_error(given, f"{name} must have {len(dims)} dim(s) [{', '.join(map(str, dims))}]")
        for dim, size in zip(dims, tensor.shape):
            expected = dim if isinstance(dim, int) else bound.setdefault(dim, size)
            if size != expected:
                _shape_error(given, f"{name}: dim {dim!r} is {size}, expected {expected}")


def _shape_error(given: dict, reason: str) -> None:
    def describe(item):
        tensor, spec = item if isinstance(item, tuple) else (item, None)
        shown = f" (expected [{', '.join(map(str, _spec_dims(spec)))}])" if spec is not None else ""
        return f"{tuple(tensor.shape)}{shown}"

    listing = ", ".join(f"{name}={describe(item)}" for name, item in given.items())
    raise ShapeError(f"shape mismatch: {reason}. Shapes: {listing}")


def check_mask(name: str, mask: torch.Tensor) -> None:
    """Raise `ValueError` unless `mask` is a floating-point tensor of 0s and 1s."""
    if not mask.is_floating_point():
        raise ValueError(f"{name} must be a float 0/1 tensor, got dtype {mask.dtype}; pass mask.float()")
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise ValueError(f"{name} must hold only 0.0 and 1.0 (1 = response token to train on)")


def check_group_ids(group_ids: torch.Tensor) -> None:
    """Raise `ValueError` unless `group_ids` is an integer tensor (one id per sample)."""
    if group_ids.is_floating_point() or group_ids.dtype == torch.bool:
        raise ValueError(f"group_ids must be an int64 tensor [batch], got dtype {group_ids.dtype}")
