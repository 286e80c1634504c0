"""Whether a built kernel's output is a function of its inputs alone: its runs on output arrays
filled with set bytes. The fuzz campaign's workers (:mod:`suite.fuzz.worker`) and triage's confined
child (:mod:`suite.triage.confined`) both run it on the after program, so a finding's UNDEFINED is
what its report's triage command says too (:func:`suite.triage.verdict.judge`'s ``undefined``)."""

from __future__ import annotations

import numpy as np

#: The byte patterns the output is filled with before the runs of :func:`undefined`: the first
#: twice, then the second.
POISONS = (0x55, 0xAA)


def undefined(target, path, arguments) -> str | None:
    """Why the build at ``path`` (run on ``arguments``) gives an output that is not a function of
    its inputs alone, in the words of what was seen, or None. It runs three times more: its output
    array filled with bytes 0x55, again with 0x55, then with 0xAA. A correct kernel gives the same
    bits each time. Two runs apart with the same inputs and the same bytes in the output array:
    its output depends on something else, memory it reads without writing it first (TVM's
    workspace, or its output array) or a race; nothing says which. The same twice but apart from
    the run on 0xAA: it reads its output array before writing it (a dropped or misplaced init).
    Native targets only (on an emulator three more runs would quadruple the emulated time), and
    kernels of one output."""
    from suite.targets.base import Mode, ModuleKernel

    if target.mode is not Mode.NATIVE:
        return None
    kernel = target.load_outputs(path, arguments)
    if type(kernel) is not ModuleKernel:  # several outputs: their arrays are not this one's
        return None
    first = kernel.result.numpy()  # one copy off the device, for the array's shape and type
    shape, dtype = first.shape, first.dtype
    outputs = []
    for byte in (POISONS[0], *POISONS):
        kernel.result.copyfrom(np.frombuffer(bytes([byte]) * (int(np.prod(shape)) * dtype.itemsize),
                                             dtype).reshape(shape))
        kernel.run()
        outputs.append(kernel.result.numpy())
    size = int(np.prod(shape))
    again = _apart(outputs[0], outputs[1])
    if again.size:
        return (f"its output is not a function of its inputs: {again.size:,} of {size:,} elements differ between two "
                f"runs on the same inputs, its output array filled with bytes 0x{POISONS[0]:02X} before each "
                f"(first at {_at(again[0], shape)}): nondeterministic, or it reads memory it did not write "
                "(TVM's workspace, or its output array)")
    apart = _apart(outputs[0], outputs[2])
    if not apart.size:
        return None
    return (f"its output depends on what its output array held before it ran: {apart.size:,} of {size:,} elements "
            f"differ between a run on an array of bytes 0x{POISONS[0]:02X} and one of 0x{POISONS[1]:02X}, and not "
            f"between two runs on 0x{POISONS[0]:02X} (first at {_at(apart[0], shape)}): read before written")


def _apart(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The flat indices of the elements whose bits differ."""
    return np.flatnonzero(np.any(a.reshape(-1, 1).view(np.uint8) != b.reshape(-1, 1).view(np.uint8), axis=1))


def _at(flat, shape) -> list[int]:
    return [int(i) for i in np.unravel_index(flat, shape)]
