"""Ids as ember.torch's modules take them: integer tensors, numpy arrays or lists, checked and
deduplicated the same way by every module."""

import numpy
import torch

from . import _ember


def as_id_tensor(ids):
    """`ids` as an integer tensor (a tensor as it is, a numpy array or a (nested) list converted),
    and whether they came as uint64 (numpy), whose ids above 2^63 read as negative int64."""
    if isinstance(ids, torch.Tensor):
        tensor, from_uint64 = ids, False
    else:
        array = numpy.asarray(ids)
        from_uint64 = array.dtype == numpy.uint64
        if from_uint64:
            array = array.view(numpy.int64)  # the bit patterns: torch has no uint64
        elif array.dtype.kind == "u":
            array = array.astype(numpy.int64)
        if array.dtype.kind not in "iu":
            raise TypeError("ids: expected integer ids (a tensor, array or list), got {}".format(
                array.dtype))
        tensor = torch.from_numpy(numpy.ascontiguousarray(array))
    if tensor.dtype.is_floating_point or tensor.dtype == torch.bool or tensor.is_complex():
        raise TypeError("ids: expected an integer tensor, got {}".format(tensor.dtype))
    return tensor, from_uint64


def unique_ids(tensor, unsigned_ids=False, padding_idx=None):
    """The sorted unique ids of `tensor` (integer, any shape; see as_id_tensor) on the CPU, and
    each id's position. Negative ids other than `padding_idx` are refused unless `unsigned_ids`
    (then an int64 id is its unsigned bit pattern)."""
    flat = tensor.reshape(-1).to("cpu", torch.int64)
    if not unsigned_ids:
        negative = flat < 0
        if padding_idx is not None:
            negative &= flat != padding_idx
        if bool(negative.any()):
            at = int(negative.nonzero()[0])
            raise _ember.InvalidArgumentError(
                "ids: id {} at position {} is negative (if int64 ids carry uint64 keys as their "
                "bit patterns, pass unsigned_ids=True; for a padding id, set padding_idx)".format(
                    int(flat[at]), at))
    return torch.unique(flat, sorted=True, return_inverse=True)
