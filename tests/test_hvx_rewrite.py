"""The HVX FP rewriter: recognition, census, refusals, packet semantics on qemu-hexagon, and TVM
kernels built for v68 with qfloat whose emulated output must equal the numpy model's prediction.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_qfloat import needs_qemu

from suite import targets
from suite.compat import build, release
from suite.compat import schedules as compat_schedules
from suite.targets import hexagon, hvx_asm, hvx_stubs, hvx_toolchain
from suite.targets import hvx_rewrite as hr
from suite.targets import qfloat as q

DATA = Path(__file__).with_name("data")
SNIPPET_DRIVER = Path(__file__).with_name("hvx_snippet_driver.c")


def _packet(*instrs, suffix=""):
    return "\t{\n" + "".join(f"\t\t{x}\n" for x in instrs) + "\t}" + (f" {suffix}" if suffix else "") + "\n"


# ----------------------------------------------------------------------------- recognition and census


def test_detection_is_broad():
    for text in ["v1.qf16 = vmpy(v2.hf,v3.hf)", "v1.hf = v2.qf16", "v1.hf = v3:2.qf32",
                 "q0 = vcmp.gt(v1.hf,v2.hf)", "v1.sf = vfmax(v2.sf,v3.sf)", "v1:0.sf = vcvt(v2.hf)",
                 "v5.bf = vmax(v1.bf,v2.bf)"]:
        assert hvx_asm.is_hvx_fp(text), text
    for text in ["v1.h = vsplat(r2)", "v1 = vmem(r1+#0)", "vmem(r1+#0) = v3.new",
                 "v1.w = vadd(v2.w,v3.w)", "r0 = sfadd(r1,r2)", "v2 = valign(v1,v3,r7)"]:
        assert not hvx_asm.is_hvx_fp(text), text


def test_census_counts_forms():
    asm = (_packet("v22.qf16 = vmpy(v0.hf,v15.hf)", "v21 = valign(v21,v23,r7)")
           + _packet("v6.qf16 = vadd(v6.qf16,v23.hf)", "v1.qf16 = vadd(v1.qf16,v22.qf16)")
           + _packet("v1.hf = v1.qf16") + _packet("v3:2.qf32 = vmpy(v4.hf,v5.hf)")
           + _packet("v7.hf = v3:2.qf32") + _packet("q1 = vcmp.gt(v1.hf,v2.hf)"))
    assert hvx_asm.census(asm) == {"vmpy(hf,hf)->qf16": 1, "vadd(qf16,hf)->qf16": 1,
                              "vadd(qf16,qf16)->qf16": 1, "conv(qf16)->hf": 1,
                              "vmpy(hf,hf)->qf32:pair": 1, "conv(qf32:pair)->hf": 1,
                              "qN = vcmp.gt(vN.hf,vN.hf)": 1}


def test_text_without_hvx_fp_is_unchanged():
    asm = ("\t.text\nf:\n" + _packet("v1.w = vadd(v2.w,v3.w)", "vmem(r0+#0) = v1.new")
           + "\t{ r0 = #0; jumpr r31 }\n" + _packet("nop", suffix=":endloop0"))
    result = hr.rewrite(asm)
    assert result.text == asm and not result.counts


@pytest.mark.parametrize("instruction", ["v1.qf16 = vfoo(v2.hf,v3.hf)", "q0 = vcmp.gt(v1.hf,v2.hf)",
                                         "v1.hf = vadd(v2.hf,v3.hf)"])
def test_unknown_hvx_fp_fails_with_its_name(instruction):
    asm = "f:\n" + _packet("r0 = add(r0,#1)", instruction)
    with pytest.raises(hvx_asm.UnknownHvxFp, match=instruction.replace("(", r"\(").replace(")", r"\)")):
        hr.rewrite(asm)


def test_refused_packet_is_named():
    # The old value of v5 is stored while the packet also jumps: no place to load v5 afterwards.
    asm = "f:\n" + _packet("v5.qf16 = vmpy(v0.hf,v1.hf)", "vmem(r0+#0) = v5", "jump .Lout")
    with pytest.raises(hvx_asm.RewriteError, match=r"packet 1 \(line 2\).*vmpy"):
        hr.rewrite(asm)


def test_rewritten_packet_structure():
    asm = "f:\n" + _packet("v3.qf16 = vmpy(v0.hf,v1.hf)", "vmem(r1+#0) = v3.new") \
        + _packet("v4.hf = v3.qf16", suffix=":endloop0")
    result = hr.rewrite(asm)
    assert result.counts == {"vmpy(hf,hf)->qf16": 1, "conv(qf16)->hf": 1}
    assert result.new_reads == 1 and result.emptied == 1
    assert "vmem(r1+#0) = v3\n" in result.text            # the .new consumer reads the register
    assert "\t\tnop\n\t} :endloop0" in result.text         # an emptied loop end keeps its packet
    assert "call qfm_vmpy_qf16_hf" in result.text and hvx_stubs.STUB_SECTION in result.text


# ----------------------------------------------------------------------------- packets on qemu


def _link(objects, out):
    subprocess.run(["ld.lld", "-static", "-e", "_start", *map(str, objects), "-o", str(out)],
                   check=True, capture_output=True)


def _run_snippet(result, inp, where):
    """The rewritten snippet linked with the driver and the models, run on ``inp``: 64 output vectors."""
    hvx_toolchain.assemble(result.text, where / "snippet.o")
    subprocess.run(["clang", "--target=hexagon-unknown-linux-musl", "-mcpu=hexagonv68", "-O2",
                    "-ffreestanding", "-fno-builtin", "-nostdlib", "-c", str(SNIPPET_DRIVER),
                    "-o", str(where / "driver.o")], check=True, capture_output=True)
    _link([where / "snippet.o", where / "driver.o", hvx_toolchain.model_object("v68")], where / "snippet.elf")
    done = subprocess.run(["qemu-hexagon", str(where / "snippet.elf")], input=inp.tobytes(),
                          capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return np.frombuffer(done.stdout, np.uint16).reshape(64, 64)


#: The two ways an instruction is computed: the scalar model only, or the vector model where it can.
MODELS = {"scalar": lambda: None, "vector": lambda: hvx_toolchain.vector_model_registers("v68")}


@needs_qemu
@pytest.mark.parametrize("model", list(MODELS))
def test_packet_semantics_on_qemu(tmp_path, model):
    asm = (DATA / "hvx_packets.s").read_text()
    result = hr.rewrite(asm, MODELS[model]())
    # every special case of the rewriter is met once
    assert (result.preloads, result.early_stores, result.late_stores, result.endloop_splits) == (1, 1, 1, 1)
    assert result.loads_after == 4 and result.new_reads == 1
    assert (result.vector > 0) == (model == "vector")

    rng = np.random.default_rng(7)
    inp = np.zeros((32, 64), np.uint16)
    inp[:17] = np.float16(rng.uniform(-3, 3, (17, 64))).view(np.uint16)
    inp[[3, 14, 15]] = rng.integers(0, 1 << 16, (3, 64))            # used as qf16
    inp[17:19] = np.float32(rng.uniform(-3, 3, (2, 32))).view(np.uint16).reshape(2, 64)
    inp[19] = np.float16(rng.uniform(-3, 3, 64)).view(np.uint16)
    out = _run_snippet(result, inp, tmp_path)

    v = {i: inp[i] for i in range(17)}
    v24, v25 = inp[17].view(np.uint32), inp[18].view(np.uint32)
    zero = np.zeros(64, np.uint16)
    want = {}
    want[0] = q.vadd_qf16_mix(v[3], v[4])                 # C1: both read old v2, v3
    want[1] = q.vmpy_qf16_hf(v[2], v[4])
    want[2], want[3] = q.vmpy_qf16_hf(v[0], v[1]), v[5]   # C3: vor saw the old v5
    want[4] = want[5] = q.vconv_hf_qf16(want[0])          # C4: .new store and register
    want[6], want[7] = q.vadd_hf(inp[19], v[10]), inp[19]  # C5: .cur data reaches the vadd
    v12 = q.vconv_hf_qf16(v[14])                          # C6: store at old r3 + 1 vector
    for k in range(8, 16):
        want[k] = zero
    want[9] = v12
    aligned = np.concatenate([v[13].view(np.uint8), v[12].view(np.uint8)])[6:134]
    want[16], want[17] = aligned.view(np.uint16), v12     # valign saw the old v12
    acc = v[15]                                           # C7: three iterations
    for k in range(3):
        want[18 + k] = acc
        acc = q.vadd_qf16_mix(acc, v[16])
    want[21] = acc
    lo, hi = q.widen_to_pair(q.vmpy_qf32_hf(v[0], v[1]))  # C9
    want[22], want[23] = lo.view(np.uint16), hi.view(np.uint16)
    want[24] = q.vconv_hf_qf32(q.pair_to_narrow(lo, hi))
    v23 = q.vadd_sf(v24, v25)
    v26 = q.vconv_sf_qf32(v23)
    want[25], want[26] = v23.view(np.uint16), v26.view(np.uint16)
    want[27], want[28] = q.vmax_sf(v26, v24).view(np.uint16), q.vmax_hf(v[0], v[1])
    want[29] = q.vmpy_qf16_hf(v[0], v[1])                 # C10: jumped over the vxor
    want[30] = np.zeros(64, np.uint16)                    # C11: r6 + 5 stored by .new
    want[30][:2] = np.array([0x1234 + 5], np.uint32).view(np.uint16)
    want[31] = q.vmpy_qf16_hf(v[0], v[1])
    want[32] = want[35] = q.vconv_hf_qf16(v[14])          # C12: the late store, and the register
    want[33] = v[0]                                       # the load saw the memory before the store
    want[34] = np.concatenate([v[13].view(np.uint8), v12.view(np.uint8)])[6:134].view(np.uint16)
    wrong = [k for k, w in want.items() if not np.array_equal(out[k], w)]
    assert not wrong, f"output vectors {wrong} differ"

    words = out[36].view(np.uint32)
    assert list(words[:11]) == [6, 0x1234, 0xFFFFFFB3, 99, 10, 11, 12, 13, 14, 15, 28]
    assert words[11] == 0x00FF00FF                         # p0, p2 true; p1, p3 false
    assert words[12] == words[20] and words[12] & (1 << 22)  # USR as set at the start
    assert (words[13], words[14]) == (0x1234, 0xFFFFFFB3)  # M0, M1


@needs_qemu
@pytest.mark.parametrize("model", list(MODELS))
def test_register_pressure_on_qemu(tmp_path, model):
    """Every vector register live across the packets: what the vector model changes is kept in
    memory, results wait in slots; the scalar model changes no vector register at all."""
    result = hr.rewrite((DATA / "hvx_pressure.s").read_text(), MODELS[model]())
    assert result.vector == (3 if model == "vector" else 0) and result.loads_after == 1
    if model == "vector":
        assert hvx_stubs.SPILL in result.text and hvx_stubs.VSAVE in result.text
    rng = np.random.default_rng(11)
    inp = np.float16(rng.uniform(-3, 3, (32, 64))).view(np.uint16)
    inp[[5, 7, 9]] = q.vmpy_qf16_hf(inp[[3, 4, 6]], inp[[8, 12, 13]])      # qf16 operands
    out = _run_snippet(result, inp, tmp_path)
    want = inp.copy()
    want[5] = q.vmpy_qf16_hf(inp[1], inp[2])
    want[1] = q.vadd_qf16(inp[5], inp[7])                  # the old v5
    want[9] = q.vadd_qf16_mix(inp[9], inp[10])
    want[11] = inp[9]                                      # vor saw the old v9
    wrong = [k for k in range(32) if not np.array_equal(out[k], want[k])]
    assert not wrong, f"output vectors {wrong} differ"


@needs_qemu
@pytest.mark.parametrize("model", list(MODELS))
def test_vinsert_keeps_the_rest_of_its_destination_on_qemu(tmp_path, model):
    """`v.w = vinsert(r)` changes one word of v: the other 31 must survive the vector model's
    calls around it (LLVM builds a 10-lane float16 vector so; the fuzz finding of
    miniresnet.matmul_add.16-10 on hexagon-v68-qf, every output wrong, came from there)."""
    result = hr.rewrite((DATA / "hvx_insert.s").read_text(), MODELS[model]())
    assert result.vector == (1 if model == "vector" else 0)
    rng = np.random.default_rng(5)
    inp = np.float16(rng.uniform(-3, 3, (32, 64))).view(np.uint16)
    out = _run_snippet(result, inp, tmp_path)
    word = inp[4].view(np.uint32)[0]
    built = [inp[k].copy() for k in (2, 3)]
    for vector in built:
        vector.view(np.uint32)[0] = word
    assert np.array_equal(out[0], q.vmpy_qf16_hf(inp[0], inp[1]))
    assert np.array_equal(out[1], built[0]) and np.array_equal(out[2], built[1])


def test_vinsert_and_vasrinto_read_their_destination():
    # Both write their destination with "=" yet keep part of it (the HVX manual's Vx, Vxx operands).
    assert hvx_asm.vector_use("v5.w = vinsert(r2)").reads_old == {5}
    assert hvx_asm.vector_use("v1:0.w = vasrinto(v2.w,v3.w)").reads_old == {0, 1, 2, 3}
    assert hvx_asm.vector_use("v5 = valign(v6,v6,#4)").reads_old == {6}
    live = _live_at((DATA / "hvx_insert.s").read_text(), "vmpy")
    assert {0, 1, 5, 7} <= live and 2 not in live


def _live_at(asm, instruction):
    items = hvx_asm.parse(asm)
    live = hvx_asm.vector_liveness(items)
    (index,) = [i for i, item in enumerate(items) if isinstance(item, hvx_asm.Packet) and instruction in item.text()]
    return live[index]


@pytest.mark.parametrize("target", [".Louter", "##.Louter"])
def test_liveness_follows_branches_written_extended(target):
    # v0 is set once and stored on every pass of the outer loop: live at the FP packet inside it,
    # through the backward branch alone (LLVM writes such branches "jump ##.L" when the short form
    # may not reach: a conv2d's outer loops).
    asm = (".Louter:\n" + _packet("vmem(r2+#0) = v0") + _packet("loop0(" + target.replace("outer", "inner") + ",#4)")
           + ".Linner:\n" + _packet("v3.qf16 = vmpy(v1.hf,v2.hf)", "v4 = vmem(r2+#1)", suffix=":endloop0")
           + _packet("r1 = add(r1,#-1)") + _packet("p0 = cmp.eq(r1,#0)")
           + _packet(f"if (!p0) jump:t {target}") + _packet("jumpr r31"))
    live = _live_at(asm, "vmpy")
    assert 0 in live and {1, 2} <= live and 4 not in live
    # A jump of a form the analysis does not know may go anywhere: everything it does not write is live.
    assert _live_at(asm.replace(f"jump:t {target}", "jump:t ##.Louter+8"), "vmpy") == hvx_asm.ALL_VECTOR - {3, 4}


# ----------------------------------------------------------------------------- TVM kernels



def _elementwise(kind, shape, dtype):
    te = release.te()
    names = {"mul": 2, "add": 2, "fma": 3, "add_relu": 2}
    ph = [te.placeholder(shape, dtype, name=n) for n in "ABD"[: names[kind]]]
    A, B = ph[0], ph[1]
    if kind == "mul":
        C = te.compute(shape, lambda *i: A(*i) * B(*i), name="C")
    elif kind == "add":
        C = te.compute(shape, lambda *i: A(*i) + B(*i), name="C")
    elif kind == "fma":
        D = ph[2]
        C = te.compute(shape, lambda *i: A(*i) * B(*i) + D(*i) * A(*i), name="C")
    else:
        zero = release.tir().const(0, dtype)
        C = te.compute(shape, lambda *i: te.max(A(*i) + B(*i), zero), name="C")
    sch = compat_schedules.schedule(te.create_prim_func([*ph, C]))
    block = compat_schedules.get_block(sch, "C")
    lanes = 64 if dtype == "float16" else 32
    _, inner = sch.split(sch.get_loops(block)[-1], factors=[None, lanes])
    sch.vectorize(inner)
    return sch.mod["main"], len(ph)


# kind, shape, dtype, expected census, prediction from the numpy face on raw bits
KERNELS = {
    "mul": ((1, 256), "float16", {"vmpy(hf,hf)->qf16": 4, "conv(qf16)->hf": 4},
            lambda a, b: q.vconv_hf_qf16(q.vmpy_qf16_hf(a, b))),
    "add": ((4, 128), "float16", {"vadd(hf,hf)->qf16": 8, "conv(qf16)->hf": 8},
            lambda a, b: q.vconv_hf_qf16(q.vadd_hf(a, b))),
    "fma": ((2, 192), "float16", {"vmpy(hf,hf)->qf16": 12, "vadd(qf16,qf16)->qf16": 6,
                                  "conv(qf16)->hf": 6},
            lambda a, b, d: q.vconv_hf_qf16(q.vadd_qf16(q.vmpy_qf16_hf(a, b), q.vmpy_qf16_hf(d, a)))),
    "add_relu": ((4, 64), "float32", {"vadd(sf,sf)->qf32": 8, "conv(qf32)->sf": 8,
                                      "vmax(sf,sf)->sf": 8},
                 lambda a, b: q.vmax_sf(q.vconv_sf_qf32(q.vadd_sf(a, b)), np.zeros_like(a))),
}


@pytest.mark.parametrize("kind", list(KERNELS))
@pytest.mark.slow
@needs_qemu
def test_tvm_kernel_matches_model(kind, tmp_path):
    shape, dtype, forms, predict = KERNELS[kind]
    func, n_inputs = _elementwise(kind, shape, dtype)
    module = build.build(func, targets.get("hexagon-v68").tvm_target())
    build.write_module_file(module, tmp_path / "k.s", "s")
    asm = (tmp_path / "k.s").read_text()
    assert dict(hvx_asm.census(asm)) == forms            # the instruction sequence the prediction follows
    stats = hvx_toolchain.build_qfloat_elf(asm, tmp_path / "k.elf")
    assert stats["rewritten"] == forms

    rng = np.random.default_rng(5)
    ftype, utype = (np.float16, np.uint16) if dtype == "float16" else (np.float32, np.uint32)
    inputs = [ftype(rng.uniform(-3, 3, shape)) for _ in range(n_inputs)]
    inputs[0].flat[:4] = [0, -0.0, 65504 if dtype == "float16" else 3e38, 1.0]   # zeros, extremes
    inputs[1].flat[:4] = [-0.0, 2.0, 2.0, 1.0]
    got = hexagon.emulate(tmp_path / "k.elf", hexagon.encode_inputs(inputs, shape, dtype), shape,
                          dtype).output
    want = predict(*[x.view(utype).reshape(-1) for x in inputs]).reshape(shape)
    assert np.array_equal(got.view(utype), want), f"{int((got.view(utype) != want).sum())} lanes differ"
    if kind == "mul":   # and the bias shows: x * 1.0 is one ulp above x in qfloat
        assert got.flat[3] == np.float16(1.0009765625)


BUILD_TOOLS_REASON = hexagon.missing_tools_reason(("clang", "ld.lld"), "the qfloat build")
needs_build_tools = pytest.mark.skipif(BUILD_TOOLS_REASON is not None, reason=BUILD_TOOLS_REASON or "")


@needs_build_tools
def test_same_kernel_gives_the_same_elf_in_any_working_directory(tmp_path, monkeypatch):
    """The emulation cache is keyed by the ELF's bytes: a kernel that two TVM commits generate
    alike must link to the same ELF, though asv builds each in another temporary directory."""
    func, _ = _elementwise("add", (4, 64), "float16")
    module = build.build(func, targets.get("hexagon-v68").tvm_target())
    build.write_module_file(module, tmp_path / "k.s", "s")
    asm = (tmp_path / "k.s").read_text()
    assert '.file\t1 "."' in asm                 # the line table names the working directory
    elves = []
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        monkeypatch.chdir(tmp_path / name)
        hvx_toolchain.build_qfloat_elf(asm, tmp_path / name / "k.elf")
        elves.append((tmp_path / name / "k.elf").read_bytes())
    assert elves[0] == elves[1]
    assert str(tmp_path).encode() not in elves[0]


# ----------------------------------------------------------------------------- the model's own code, checked

#: A compiled listing as clang writes it: labels, directives, comments, one instruction a line.
LISTING = """\t.text
\t.globl\tqf_add                          // -- Begin function qf_add
qf_add:                                 // @qf_add
// %bb.0:                               // loop0, usr and memcpy in a comment are no code
\t{
\t\tr1:0 = combine(r2,r3)
\t\tp0 = cmp.gt(r1,#0); if (!p0.new) jump:nt .LBB0_2
\t}
\t{
\t\tcall qf_round
\t\tv1 = vmem(r0+#0)
\t}
\t{
\t\tv1.w = vadd(v1.w,v2.w)
\t\tjumpr r31
\t}
\t.size\tqf_add, .Lfunc_end0-qf_add
"""


def _refusal(name: str, code: str) -> str:
    return re.escape(f"{name} code touches caller state: {code!r}")


@pytest.mark.parametrize("code", ["loop0(.LBB0_3,r5)", "r2 = lc0", "sa1 = r3", "r0 = usr", "r1 = memw(gp+#8)",
                                  "m0 = r2", "c8 = r0", "r0 = add(r1,r2):sat", "call memcpy", "jump memcpy",
                                  "call:nt __hexagon_divsi3", "if (p0) jump:nt abort"])
def test_the_models_code_may_not_touch_the_kernels_state(code):
    """The model runs in the middle of the rewritten kernel, which keeps its hardware loops, GP,
    saturation flag and every register a call may not clobber: a listing that touches them, or
    calls what is not the models' own, is refused, naming the instruction."""
    hvx_toolchain._check_listing("model.c", LISTING, hvx_toolchain._MODEL_FORBIDDEN)  # accepted as it is
    listing = LISTING.replace("\t\tv1.w = vadd(v1.w,v2.w)\n", f"\t\tv1.w = vadd(v1.w,v2.w)\n\t\t{code}\n")
    with pytest.raises(RuntimeError, match=_refusal("model.c", code)):
        hvx_toolchain._check_listing("model.c", listing, hvx_toolchain._MODEL_FORBIDDEN)


@pytest.mark.parametrize("code", ["vmem(r0+#0) = v0.new", "vmem(r1+#1):nt = v2", "vmemu(r3+#0) = v4",
                                  "q0 = vcmp.eq(v1.w,v2.w)", "v1 = vmux(q3,v2,v3)"])
def test_the_vector_model_may_not_store_vectors_or_touch_predicates(code):
    hvx_toolchain._check_listing("vector_model.c", LISTING, hvx_toolchain._VECTOR_FORBIDDEN)  # a load is fine
    listing = LISTING.replace("\t\tjumpr r31\n", f"\t\tjumpr r31\n\t\t{code}\n")
    hvx_toolchain._check_listing("vector_model.c", listing, hvx_toolchain._MODEL_FORBIDDEN)  # the scalar rules allow it
    with pytest.raises(RuntimeError, match=_refusal("vector_model.c", code)):
        hvx_toolchain._check_listing("vector_model.c", listing, hvx_toolchain._VECTOR_FORBIDDEN)


CLANG_REASON = hexagon.missing_tools_reason(("clang",), "compiling the qfloat model")


@pytest.mark.skipif(CLANG_REASON is not None, reason=CLANG_REASON or "")
def test_compiled_model_code_is_refused_or_accepted(tmp_path):
    """What clang makes of C, with the model's own flags (:func:`hvx_toolchain.model_object`): a
    call to memcpy, a hardware loop (without ``-disable-hexagon-hwloops``) and a vector store are
    refused; the model's sources, compiled as the suite compiles them, are accepted."""
    def listing(source, flags, hvx: bool) -> str:
        """The listing of ``source`` (a file, or the name of one written here with the C given)."""
        if isinstance(source, tuple):
            (tmp_path / source[0]).write_text(source[1])
            source = tmp_path / source[0]
        out = tmp_path / f"{source.name}.s"
        hexagon.check_run(hvx_toolchain._clang("v68", hvx) + flags + ["-S", str(source), "-o", str(out)],
                          f"compiling {source.name}")
        return out.read_text()

    model, vector = hvx_toolchain.MODEL_FLAGS, hvx_toolchain.VECTOR_FLAGS
    copy = listing(("copy.c", "void *memcpy(void *, const void *, unsigned long);\n"
                              "void qf_copy(char *d, const char *s) { memcpy(d, s, 64); }\n"), model, False)
    with pytest.raises(RuntimeError, match=r"^copy\.c code touches caller state: '(call|jump) memcpy'$"):
        hvx_toolchain._check_listing("copy.c", copy, hvx_toolchain._MODEL_FORBIDDEN)
    loop = "int qf_sum(const int *x, int n) { int s = 0; for (int i = 0; i < n; i++) s += 3 * x[i]; return s; }\n"
    at = model.index("-disable-hexagon-hwloops")
    hardware_loops = model[:at - 1] + model[at + 1:]  # without its "-mllvm -disable-hexagon-hwloops"
    with pytest.raises(RuntimeError, match=r"^loop\.c code touches caller state: 'loop0\(\.LBB\w+,r\d+\)'$"):
        hvx_toolchain._check_listing("loop.c", listing(("loop.c", loop), hardware_loops, False),
                                     hvx_toolchain._MODEL_FORBIDDEN)
    hvx_toolchain._check_listing("sum.c", listing(("sum.c", loop), model, False), hvx_toolchain._MODEL_FORBIDDEN)
    store = listing(("store.c", "typedef int V __attribute__((__vector_size__(128)));\n"
                                "void vq_add(V *p, const V *a, const V *b) { *p = *a + *b; }\n"), vector, True)
    hvx_toolchain._check_listing("store.c", store, hvx_toolchain._MODEL_FORBIDDEN)
    with pytest.raises(RuntimeError, match=r"^store\.c code touches caller state: 'vmem\(r0\+#0\)(:\w+)? = v\d+"):
        hvx_toolchain._check_listing("store.c", store, hvx_toolchain._VECTOR_FORBIDDEN)
    for source in hvx_toolchain.MODEL_SOURCES:
        hvx_toolchain._check_listing(source.name, listing(source, model, False),
                                     hvx_toolchain._MODEL_FORBIDDEN)
    source = hvx_toolchain.VECTOR_SOURCE
    text = listing(source, vector, True)
    for forbidden in (hvx_toolchain._MODEL_FORBIDDEN, hvx_toolchain._VECTOR_FORBIDDEN):
        hvx_toolchain._check_listing(source.name, text, forbidden)


INT16_ADD_SHAPE = (4, 128)


def int16_add_kernel(where):
    """A vectorized int16 add (no HVX floating point) built for v68: its assembly ``k.s`` and
    TVM's object ``k.o`` in ``where``; returns the assembly."""
    te = release.te()
    A = te.placeholder(INT16_ADD_SHAPE, "int16", name="A")
    B = te.placeholder(INT16_ADD_SHAPE, "int16", name="B")
    C = te.compute(INT16_ADD_SHAPE, lambda i, j: A[i, j] + B[i, j], name="C")
    sch = compat_schedules.schedule(te.create_prim_func([A, B, C]))
    _, inner = sch.split(sch.get_loops(compat_schedules.get_block(sch, "C"))[-1], factors=[None, 64])
    sch.vectorize(inner)
    module = build.build(sch.mod["main"], targets.get("hexagon-v68").tvm_target())
    build.write_module_file(module, where / "k.s", "s")
    build.write_module_file(module, where / "k.o", "o")
    return (where / "k.s").read_text()


@pytest.mark.slow
@needs_qemu
def test_build_without_hvx_fp_runs_bit_identically(tmp_path):
    shape = INT16_ADD_SHAPE
    asm = int16_add_kernel(tmp_path)
    assert "vadd(" in asm and not hvx_asm.census(asm)
    assert hr.rewrite(asm).text == asm
    stats = hvx_toolchain.build_qfloat_elf(asm, tmp_path / "rewritten.elf")
    assert stats["instructions"] == 0
    hvx_toolchain.assemble(asm, tmp_path / "plain.o")                 # the original text, no model linked
    _link([tmp_path / "plain.o", hexagon.harness_object("v68")], tmp_path / "plain.elf")
    rng = np.random.default_rng(2)
    inputs = [rng.integers(-20000, 20000, shape).astype(np.int16) for _ in range(2)]
    stdin = hexagon.encode_inputs(inputs, shape, "int16")
    plain = hexagon.emulate(tmp_path / "plain.elf", stdin, shape, "int16")
    rewritten = hexagon.emulate(tmp_path / "rewritten.elf", stdin, shape, "int16")
    assert plain.output.tobytes() == rewritten.output.tobytes()
    assert np.array_equal(plain.output, inputs[0] + inputs[1])


def _seed_tuned_prediction(x_bits, w_bits, rows):
    """The tuned seed conv2d's output rows, composed from the numpy face in the TIR's order.

    The tuned PrimFunc keeps conv2d_nhwc_global in fp16 and, for each of the 7 rx_0 steps, adds
    the 21 products (ry_1 outer, rc_1 inner) to it in order; LLVM keeps the partial sum in qf16:
    t = vadd(qf16 product, hf global), t = vadd(qf16 product, t) twenty times, global = hf(t).
    """
    g = np.zeros((len(rows), 112, 64), np.uint16)
    rows = np.asarray(rows)
    for rx in range(7):
        t = None
        for ry in range(7):
            for rc in range(3):
                a = x_bits[2 * rows[:, None] + ry, 2 * np.arange(112)[None, :] + rx, rc][:, :, None]
                p = q.vmpy_qf16_hf(np.broadcast_to(a, g.shape),
                                   np.broadcast_to(w_bits[ry, rx, rc], g.shape))
                t = q.vadd_qf16_mix(p, g) if t is None else q.vadd_qf16(p, t)
        g = q.vconv_hf_qf16(t)
    return g


@pytest.mark.slow
@needs_qemu
def test_seed_tuned_conv2d_runs_exactly_as_predicted(tmp_path):
    """The seed issue's tuned fp16 conv2d (86 HVX FP instructions, ~3.7 M executed vector
    instructions): emulated with the model, sampled output rows equal the numpy composition bit
    for bit (all 802,816 elements matched when this was written; about 30 s of emulation)."""
    from suite.core import schedules, workloads

    w = workloads.get("seed.conv2d_nhwc_7x7s2")
    func = schedules.apply(workloads.prim_func(w, "float16"), "seed-tuned", w.id, "float16",
                           "hexagon-v68")
    module = build.build(func, targets.get("hexagon-v68").tvm_target())
    build.write_module_file(module, tmp_path / "k.s", "s")
    asm = (tmp_path / "k.s").read_text()
    stats = hvx_toolchain.build_qfloat_elf(asm, tmp_path / "k.elf")
    assert stats["rewritten"] == {"vmpy(hf,hf)->qf16": 42, "vadd(qf16,qf16)->qf16": 40,
                                  "vadd(qf16,hf)->qf16": 2, "conv(qf16)->hf": 2}
    assert stats["rewrite_s"] + stats["assemble_s"] + stats["link_s"] < 30
    x, weights = workloads.make_inputs(w, "float16")
    got = hexagon.emulate(tmp_path / "k.elf", hexagon.encode_inputs([x, weights], w.output_shape,
                                                                      "float16"),
                          w.output_shape, "float16").output
    rows = [0, 1, 55, 111]
    want = _seed_tuned_prediction(x.view(np.uint16)[0], weights.view(np.uint16), rows)
    assert np.array_equal(got.view(np.uint16)[0, rows], want)
