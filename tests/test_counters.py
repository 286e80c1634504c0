"""Packets, instructions and HVX instructions executed (QEMU's counters, read by the harness around
the kernel call): exact against a count worked out by hand, the same under every model of the HVX
floating-point instructions and on every run, and on the qf targets those of the program TVM
emitted, not of the rewritten one."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from test_hvx_rewrite import INT16_ADD_SHAPE, _elementwise, int16_add_kernel
from test_qfloat import needs_qemu

from suite import targets
from suite.compat import build
from suite.targets import hexagon, hvx_asm, hvx_toolchain
from suite.targets import hvx_rewrite as hr

COUNTED_KERNEL = Path(__file__).with_name("data") / "counted_kernel.s"
#: Worked out by hand from the comments of counted_kernel.s: 4 packets before the loop, 9 per
#: iteration x 10, then 1 + 3 x 1 + 1; an extender (##) and a nop are not instructions, a vector
#: load or store is an HVX instruction.
HAND_COUNTED = {"packets": 4 + 9 * 10 + 1 + 3 + 1,
                "instructions": 6 + 21 * 10 + 1 + 3 + 2,
                "hvx_instructions": 2 + 20 * 10 + 0 + 3 + 0}


def _run(elf, ieee_twin=False, fast_ticks=False):
    one = np.zeros(4, np.float16)      # the hand-written kernel reads no argument
    stdin = hexagon.encode_inputs([one], (4,), "float16", ieee_twin=ieee_twin, fast_ticks=fast_ticks)
    return hexagon.emulate(elf, stdin, (4,), "float16").counts


def _rewritten_elf(asm, where, vector_model):
    """The kernel rewritten for the HVX model: the vector model (as the qf targets build it) or the
    scalar model alone."""
    if vector_model:
        hvx_toolchain.build_qfloat_elf(asm, where / "vector.elf")
        return where / "vector.elf"
    hvx_toolchain.assemble(hr.rewrite(asm, None).text, where / "scalar.o")
    hexagon.link([where / "scalar.o", hexagon.harness_object("v68"), hvx_toolchain.model_object("v68")], where / "scalar.elf")
    return where / "scalar.elf"


@pytest.mark.slow
@needs_qemu
def test_hand_written_kernel_counts_exactly_under_every_model(tmp_path):
    asm = COUNTED_KERNEL.read_text()
    # The same packets with integer instructions in place of the floating-point ones (the QEMU
    # the suite runs has no HVX floating point of its own): a program without any model.
    hvx_toolchain.assemble(_substitute_integer(asm), tmp_path / "integer.o")
    hexagon.link([tmp_path / "integer.o", hexagon.harness_object("v68")], tmp_path / "integer.elf")
    assert _run(tmp_path / "integer.elf") == HAND_COUNTED
    # Ticks every 20 us: most calls end with a tick due, which must be totalled before the last
    # look at the counters, not after it (16 packets more: the look itself, seen under load).
    assert [_run(tmp_path / "integer.elf", fast_ticks=True) for _ in range(10)] == [HAND_COUNTED] * 10
    for vector_model in (True, False):
        elf = _rewritten_elf(asm, tmp_path, vector_model)
        for ieee_twin in (False, True):
            for fast_ticks in (False, True):
                assert _run(elf, ieee_twin, fast_ticks) == HAND_COUNTED, (vector_model, ieee_twin, fast_ticks)
    assert _run(elf) == _run(elf)


def _substitute_integer(asm):
    """``asm`` with each HVX floating-point instruction replaced by an HVX integer instruction of
    the same shape (one instruction, same destination registers, in its packet): a program whose
    counts are those TVM's would have on a machine, executable without any model."""
    def integer(code):
        fp = hvx_asm.parse_fp(code)
        a = fp.srcs[0][-1]
        b = fp.srcs[1][-1] if len(fp.srcs) > 1 else a
        if len(fp.dst) == 2:
            return f"v{fp.dst[1]}:{fp.dst[0]}.w = vmpy(v{a}.h,v{b}.h)"
        return f"v{fp.dst[0]}.h = {'vmpyi' if 'vmpy' in code else 'vadd'}(v{a}.h,v{b}.h)"

    out = []
    for line in asm.splitlines(keepends=True):
        code = hvx_asm.strip_comment(line).strip()
        if code and hvx_asm.is_hvx_fp(code):
            out.append(re.sub(re.escape(code), integer(code), line, count=1))
        else:
            out.append(line)
    return "".join(out)


@pytest.mark.slow
@needs_qemu
@pytest.mark.parametrize("kind,shape,dtype", [("fma", (2, 192), "float16"), ("add_relu", (4, 64), "float32")])
def test_tvm_kernel_counts_as_the_program_tvm_emitted(tmp_path, kind, shape, dtype):
    func, n_inputs = _elementwise(kind, shape, dtype)
    target = targets.get("hexagon-v68")
    module = build.build(func, target.tvm_target())
    build.write_module_file(module, tmp_path / "k.s", "s")
    build.write_module_file(module, tmp_path / "k.o", "o")
    asm = (tmp_path / "k.s").read_text()
    assert hvx_asm.census(asm)
    # The oracle: the same packets with integer instructions in place of the floating-point ones,
    # aligned as TVM's object is.
    oracle = hr.rewrite(_substitute_integer(asm), None, hvx_asm.object_padding(asm, tmp_path / "k.o"))
    assert not hvx_asm.census(oracle.text)
    hvx_toolchain.assemble(oracle.text, tmp_path / "oracle.o")
    hexagon.link([tmp_path / "oracle.o", hexagon.harness_object("v68")], tmp_path / "oracle.elf")
    hvx_toolchain.build_qfloat_elf(asm, tmp_path / "qf.elf", tvm_object=tmp_path / "k.o")
    rng = np.random.default_rng(3)
    inputs = [rng.uniform(-2, 2, shape).astype(dtype) for _ in range(n_inputs)]
    counts = []
    for elf, twin in [(tmp_path / "oracle.elf", False), (tmp_path / "qf.elf", False), (tmp_path / "qf.elf", True)]:
        stdin = hexagon.encode_inputs(inputs, shape, dtype, ieee_twin=twin)
        counts.append(hexagon.emulate(elf, stdin, shape, dtype).counts)
    assert counts[0]["packets"] > 0 and counts[0]["hvx_instructions"] > 0
    assert counts[1] == counts[0] and counts[2] == counts[0]


@pytest.mark.slow
@needs_qemu
def test_no_hvx_fp_counts_as_tvms_own_object(tmp_path):
    shape = INT16_ADD_SHAPE
    asm = int16_add_kernel(tmp_path)
    hexagon.link([tmp_path / "k.o", hexagon.harness_object("v68")], tmp_path / "tvm.elf")
    hvx_toolchain.build_qfloat_elf(asm, tmp_path / "qf.elf", tvm_object=tmp_path / "k.o")
    rng = np.random.default_rng(2)
    stdin = hexagon.encode_inputs([rng.integers(-99, 99, shape).astype(np.int16) for _ in range(2)], shape, "int16")
    tvm_counts = hexagon.emulate(tmp_path / "tvm.elf", stdin, shape, "int16").counts
    assert tvm_counts == hexagon.emulate(tmp_path / "qf.elf", stdin, shape, "int16").counts
    assert tvm_counts["hvx_instructions"] >= 3 * 4 * 2     # per 64-lane vector: two loads, an add, a store


def test_packet_floor_follows_the_hvx_resources():
    # 2 vector multiplies per packet x 64 fp16 lanes = 128 multiply-accumulates per packet; 32 lanes for fp32.
    assert hexagon.packet_floor(128, "float16") == 1
    assert hexagon.packet_floor(129, "float16") == 2
    assert hexagon.packet_floor(64 * 2 * 1000, "float32") == 2000
    assert hexagon.packet_floor(0, "float16") == 0
