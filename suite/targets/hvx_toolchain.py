"""Building the qfloat ELF: the HVX floating-point model compiled and checked, the rewritten kernel
assembled, both linked with the harness (:func:`build_qfloat_elf`).

Both models are compiled with ``-G0`` (no GP) and without hardware loops (SA0/LC0/SA1/LC1 of
the kernel's loops survive the call); the scalar model without HVX (it never touches vector
registers), the vector model without vector stores and predicate registers (the kernel may keep
its own in Q0-Q3). :func:`model_object` checks their assembly for that.
"""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path

from suite import cache
from suite.compat import build
from suite.targets import hexagon, hvx_asm, hvx_plan, hvx_rewrite, hvx_stubs
from suite.targets.hvx_asm import object_padding, strip_comment, vector_regs
from suite.targets.hvx_rewrite import rewrite
from suite.targets.hvx_stubs import (
    CALLEE_SAVED,
    VECTOR_ENTRIES,
    VECTOR_FORMS,
    VectorModelRegisters,
    spill_source,
)

#: The model the rewritten code calls: hvx_model.c (entry points, scratch memory, which arithmetic),
#: qfloat_model.c (qfloat) and ieee_model.c (its IEEE twin, see suite.targets.ieee_twin), one lane at a
#: time; vector_model.c: both on HVX integer instructions, 64 lanes at once, for the instructions fp16
#: code executes most.
MODEL_SOURCES = tuple(Path(__file__).with_name(name) for name in ("hvx_model.c", "qfloat_model.c", "ieee_model.c"))
VECTOR_SOURCE = Path(__file__).with_name("vector_model.c")
#: The rewriter's own code: what the rewritten kernel and the checks of the model object follow.
REWRITER = (Path(hvx_asm.__file__), Path(hvx_stubs.__file__), Path(hvx_plan.__file__), Path(hvx_rewrite.__file__),
            Path(__file__))
#: The vector model without LLVM's machine scheduler: its order is the source's (see
#: vector_model.c), which keeps few vector registers alive, and every one a stub must keep aside
#: costs a register move, or a spill when no register is free.
VECTOR_FLAGS = ["-O1", "-ffreestanding", "-fno-builtin", "-nostdlib", "-G0", "-mllvm", "-disable-hexagon-hwloops",
                "-mllvm", "-enable-misched=false", "-mllvm", "-enable-post-misched=false"]
MODEL_FLAGS = ["-O2", "-ffreestanding", "-fno-builtin", "-nostdlib", "-G0",
               "-mllvm", "-disable-hexagon-hwloops"]

# ----------------------------------------------------------------------------- building


def _clang(arch: str, hvx: bool) -> list[str]:
    flags = ["clang", "--target=hexagon-unknown-linux-musl", f"-mcpu=hexagon{arch}"]
    if hvx:
        flags += ["-mhvx", "-mhvx-length=128b"]
    return flags


_MODEL_FORBIDDEN = re.compile(r"\b(?:loop[01]|sa[01]|lc[01]|usr|gp|m[01]|c\d+)\b|:sat\b"
                              r"|\b(?:call|jump)(?::\w+)?\s+(?!\.L|(?:qf|ieee|vq|vi|half)_)")
#: What the vector model must not do on top: store a vector (slow under QEMU, see SPILL: the
#: spills of a compiler out of registers included) or touch the kernel's predicates Q0-Q3.
_VECTOR_FORBIDDEN = re.compile(r"\bvmem\w*\([^)]*\)(?::\w+)?\s*=|\bq[0-3]\b")


def _check_listing(name: str, listing: str, forbidden) -> None:
    for line in listing.splitlines():
        code = strip_comment(line).strip()
        if code and not code.startswith(".") and forbidden.search(code):
            raise RuntimeError(f"{name} code touches caller state: {code!r}")


def _vector_registers(listing: str) -> VectorModelRegisters:
    """The registers the vector model's entry points use, from its compiled assembly."""
    functions, calls, current = {}, {}, None
    predicates = False
    for line in listing.splitlines():
        code = strip_comment(line).strip()
        # A label is the whole line: "r1:0 = combine(...)" is a register pair, not a label.
        head = re.fullmatch(r"([A-Za-z_]\w*):", code)
        if head:
            current = head.group(1)
            functions[current], calls[current] = (set(), set()), set()
            continue
        if current is None or not code or code.startswith("."):
            continue
        vector, scalar = functions[current]
        vector |= {reg for reg, _ in vector_regs(code)}
        for high, low in re.findall(r"\br(\d+)(?::(\d+))?\b", code):
            scalar |= {int(high)} | ({int(low)} if low else set())
        predicates |= bool(re.search(r"\bp[0-3]\b", code))
        calls[current] |= set(re.findall(r"\b(?:call|jump)(?::\w+)?\s+([A-Za-z_]\w*)", code))
    found = {"vector": {}, "scalar": {}}
    for arith, prefix in VECTOR_ENTRIES.items():
        found["vector"][arith], found["scalar"][arith] = {}, {}
        for name in (n for n in functions if n.startswith(prefix)):
            seen, todo, vector, scalar = set(), [name], set(), set()
            while todo:
                function = todo.pop()
                if function in seen or function not in functions:
                    continue
                seen.add(function)
                vector |= functions[function][0]
                scalar |= functions[function][1]
                todo += list(calls[function])
            found["vector"][arith][name.removeprefix(prefix)] = frozenset(vector)
            found["scalar"][arith][name.removeprefix(prefix)] = frozenset(scalar - CALLEE_SAVED)
        if set(found["vector"][arith]) != set(VECTOR_FORMS):
            raise RuntimeError(f"vector_model.c defines {prefix}{sorted(found['vector'][arith])}, not the VECTOR_FORMS")
    return VectorModelRegisters(found["vector"], found["scalar"], predicates)


def model_object(arch: str = "v68") -> Path:
    """The HVX floating-point model compiled for ``arch`` and linked into one relocatable object
    (``hvx_model.c``, the scalar qfloat model and its IEEE twin, the vector model, the spill
    routines), cached by sources, flags and clang version; beside it ``vector_registers.json``
    (:func:`vector_model_registers`).

    Refuses a model whose code would touch what the rewritten kernel keeps live across the call
    without saving it: hardware-loop registers, GP, saturation flags, calls to anything but the
    models' own functions (runtime helpers, memcpy), and in the vector model vector stores and
    predicate registers.
    """
    _model_entry(arch)
    return _model_entry(arch) / "hvx_model.o"


def vector_model_registers(arch: str = "v68") -> VectorModelRegisters:
    """The registers the vector model's entry points may change (see :class:`VectorModelRegisters`)."""
    return VectorModelRegisters.from_json((_model_entry(arch) / "vector_registers.json").read_text())


def _model_entry(arch: str) -> Path:
    sources = {path.name: cache.source_digest(path) for path in MODEL_SOURCES + (VECTOR_SOURCE,)}
    key = {"sources": sources, "rewrite": [cache.source_digest(p) for p in REWRITER], "flags": MODEL_FLAGS,
           "vector_flags": VECTOR_FLAGS, "clang": hexagon.tool_version("clang"), "arch": arch}
    where = cache.entry("qfloat-model", arch, key)
    if cache.load_entry(where, ("hvx_model.o", "vector_registers.json")):
        return where
    with tempfile.TemporaryDirectory() as tmp:
        objects = []
        for source, flags, hvx, forbidden in [(s, MODEL_FLAGS, False, None) for s in MODEL_SOURCES] + [
                (VECTOR_SOURCE, VECTOR_FLAGS, True, _VECTOR_FORBIDDEN)]:
            listing = Path(tmp) / f"{source.stem}.s"
            hexagon.check_run(_clang(arch, hvx) + flags + ["-S", str(source), "-o", str(listing)],
                              f"compiling {source.name}")
            _check_listing(source.name, listing.read_text(), _MODEL_FORBIDDEN)
            if forbidden is not None:
                _check_listing(source.name, listing.read_text(), forbidden)
                registers = _vector_registers(listing.read_text())
            objects.append(Path(tmp) / f"{source.stem}.o")
            hexagon.check_run(_clang(arch, hvx) + flags + ["-c", str(source), "-o", str(objects[-1])],
                              f"compiling {source.name}")
        spill = Path(tmp) / "spill.s"
        spill.write_text(spill_source())
        objects.append(Path(tmp) / "spill.o")
        hexagon.check_run(_clang(arch, True) + ["-c", str(spill), "-o", str(objects[-1])], "assembling the spills")
        cache.store_entry(where, {
            "hvx_model.o": lambda out: hexagon.check_run(["ld.lld", "-r", *map(str, objects), "-o", out],
                                                         "linking the HVX model"),
            "vector_registers.json": lambda out: Path(out).write_text(registers.to_json())})
    return where


def assemble(asm: str, obj: Path, arch: str = "v68") -> None:
    """Assemble LLVM 22 Hexagon assembly with clang 14 (``.attribute`` lines dropped)."""
    text = "".join(line for line in asm.splitlines(keepends=True)
                   if not line.lstrip().startswith(".attribute"))
    # TVM's assembly declares its line-table file relative to "." (`.file 1 "." ...`); the
    # assembler would record the working directory (a random temporary one under asv) as the
    # DWARF compilation directory. A fixed one keeps the object, the ELF, and so the emulation
    # cache key, the same wherever and whenever the same code is assembled.
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "kernel.s"
        src.write_text(text)
        command = _clang(arch, True) + ["-fdebug-compilation-dir=.", "-c", str(src), "-o", str(obj)]
        hexagon.check_run(command, "assembling the rewritten kernel")


#: Emissions of one module tried for an object and an assembly that agree packet for packet.
PAIR_ATTEMPTS = 3


def emit_object_and_assembly(module, object_path: Path) -> str:
    """Write TVM's object of a built Hexagon ``module`` to ``object_path`` and its assembly beside it
    (``.s``), each atomically; return the assembly. TVM emits the two in two LLVM code generations,
    and once in a full test run they disagreed (an object of 1307 packets, its assembly 1303): the
    pair is checked packet for packet (:func:`object_padding`) and emitted again while it
    disagrees, ``PAIR_ATTEMPTS`` times at most; a pair that never agrees raises the
    :class:`hvx_asm.RewriteError` of the last."""
    object_path = Path(object_path)
    for attempt in range(1, PAIR_ATTEMPTS + 1):
        for path, fmt in ((object_path.with_suffix(".s"), "s"), (object_path, "o")):
            cache.write_file(path, lambda tmp, fmt=fmt: build.write_module_file(module, tmp, fmt))
        asm = object_path.with_suffix(".s").read_text()
        try:
            object_padding(asm, object_path)
        except hvx_asm.RewriteError:
            if attempt == PAIR_ATTEMPTS:
                raise
        else:
            return asm


def build_qfloat_elf(asm_text: str, out_elf_path, arch: str = "v68", tvm_object: Path | None = None) -> dict:
    """Rewrite, assemble and link a kernel's assembly with the harness and the qfloat model.

    ``tvm_object``: the object TVM built from that assembly, whose alignment padding the kernel
    keeps (:func:`object_padding`); without it, the assembler aligns anew. The rewritten object is
    written beside the ELF (``<name>.rewritten.o``). Returns statistics: instructions rewritten per
    canonical form, packets, loads placed after their packet, ``.new`` reads, and the seconds each
    step took.
    """
    hexagon.require_tools(("clang", "ld.lld"), "the qfloat build")
    t0 = time.perf_counter()
    padding = object_padding(asm_text, Path(tvm_object)) if tvm_object is not None else None
    result = rewrite(asm_text, vector_model_registers(arch), padding)
    t1 = time.perf_counter()
    out_elf = Path(out_elf_path)
    out_elf.parent.mkdir(parents=True, exist_ok=True)
    obj = out_elf.with_name(out_elf.stem + ".rewritten.o")
    assemble(result.text, obj, arch)
    t2 = time.perf_counter()
    harness = hexagon.harness_object(arch)
    model = model_object(arch)
    hexagon.link([obj, harness, model], out_elf)
    t3 = time.perf_counter()
    return {"rewritten": dict(result.counts), "instructions": sum(result.counts.values()),
            "packets": result.packets, "loads_after": result.loads_after,
            "new_reads": result.new_reads, "emptied_packets": result.emptied,
            "preloads": result.preloads, "early_stores": result.early_stores, "late_stores": result.late_stores,
            "endloop_splits": result.endloop_splits, "padding_packets": sum((padding or {}).values()),
            "rewrite_s": t1 - t0, "assemble_s": t2 - t1, "link_s": t3 - t2}
