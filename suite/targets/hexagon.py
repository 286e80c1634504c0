"""Hexagon targets: TVM's real Hexagon codegen, compile metrics, and execution on qemu-hexagon.

- ``hexagon-v68``, ``hexagon-v69``, ``hexagon-v73`` are compile-only: the flags of TVM's target tags
  (``qcom/hexagon-v6x``: ``+hvxv6x,+hvx-length128b,+hvx-qfloat,-hvx-ieee-fp``, and for v68
  ``-force-hvx-float``) plus the LLVM options TVM's own Hexagon build (``target.build.hexagon``) adds.
  They give an ELF32 Hexagon object and its assembly, from which :func:`codegen_metrics` reads code
  size and HVX qfloat / vector / scalar floating-point instruction counts.
- ``hexagon-v68-emu`` is the same schedule built with HVX floating point off (QEMU implements no HVX
  float, qfloat or IEEE) and linked with a freestanding C harness (``hexagon_harness.c``) into a
  static ELF that ``qemu-hexagon`` runs. Debian 12's QEMU 7.2 knows CPU v67 only and refuses an ELF
  whose e_flags say v68, so this variant is generated for ``hexagonv67`` with HVX v67 (which has no
  HVX float at all): with HVX float off, v68 adds nothing this code uses (the v68 and v67 builds of
  the default seed conv2d give the same instructions), and the result is honest v67 machine code,
  not a v68 ELF with patched flags.
  Its time is *emulated* time (``emulated_s``), never hardware latency.

The ``tuned`` order of every Hexagon target replays, per workload, the committed records tuned for
``hexagon-v68-qf`` (MetaSchedule with TVM's Hexagon rules, candidates run under the emulator:
:mod:`suite.targets.hexagon_tune`) where there is one, else the **llvm** records (``records_from``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from suite import cache
from suite.compat import build as compat_build
from suite.errors import TargetUnavailable, UserError
from suite.targets.base import Kernel, Mode, NotTunable, Target

#: LLVM options TVM's ``target.build.hexagon`` adds to the tag's own.
TVM_HEXAGON_BUILD_OPTIONS = [
    "-hexagon-small-data-threshold=0",
    "-force-target-max-vector-interleave=1",
    "-hexagon-autohvx=1",
]

EMU_TOOLS = ("qemu-hexagon", "clang", "ld.lld")
HARNESS_SOURCE = Path(__file__).with_name("hexagon_harness.c")
#: Seconds one emulated run may take (the seed conv2d takes ~45 s on an idle core, minutes loaded).
EMULATION_TIMEOUT_S = 1800
_MAGIC_IN, _MAGIC_OUT = 0x48585654, 0x54585654
_PROTOCOL = 3  #: hexagon_harness.c VERSION
_FLAG_IEEE_TWIN, _FLAG_FAST_TICKS = 1, 2  #: hexagon_harness.c FLAG_IEEE_TWIN, FLAG_FAST_TICKS
_TRAILER = struct.Struct("<2I4Q")  #: magic, status, elapsed ns, packets, instructions, HVX instructions
#: What the harness counts of the call (QEMU's execution counters, see hexagon_harness.c).
COUNTS = ("packets", "instructions", "hvx_instructions")
#: The HVX resources a packet has (Qualcomm's Hexagon HVX Programmer's Reference Manual, "VLIW
#: packing rules": load, store, shift, permute/shift and two multiply resources; HVX floating point
#: uses the same shift and multiply resources): at most two vector multiplies issue per packet,
#: each on a 1024-bit vector of 64 fp16 or 32 fp32 lanes. A halfword multiply may take both
#: resources, so the floor below is the optimistic one: no schedule needs fewer packets.
HVX_MULTIPLIES_PER_PACKET = 2
#: Multiply-accumulates one vector multiply does: a lane each in fp16 and fp32; in int8, vrmpy's 32
#: int32 lanes each add 4 uint8 x int8 products.
HVX_LANES = {"float16": 64, "float32": 32, "int8": 128}


def packet_floor(multiply_accumulates: int, dtype: str) -> int:
    """The fewest packets HVX allows for ``multiply_accumulates`` in ``dtype``: every multiply
    resource busy in every packet (0 for none)."""
    per_packet = HVX_LANES[dtype] * HVX_MULTIPLIES_PER_PACKET
    return -(-multiply_accumulates // per_packet)


_TYPE_CODES = {"i": 0, "u": 1, "f": 2}


class ToolMissing(UserError):
    """qemu-hexagon, clang or ld.lld is not installed (one-line message)."""


class EmulationFailed(RuntimeError):
    pass


def missing_tools(tools=EMU_TOOLS) -> list[str]:
    return [tool for tool in tools if shutil.which(tool) is None]


def missing_tools_reason(tools=EMU_TOOLS, what="hexagon-v68-emu") -> str | None:
    """Why ``what`` cannot run here (tools missing), or None."""
    missing = missing_tools(tools)
    if not missing:
        return None
    return (f"{what} needs {', '.join(tools)}; missing: {', '.join(missing)} "
            "(on Debian: apt-get install qemu-user clang lld)")


def require_tools(tools=EMU_TOOLS, what="hexagon-v68-emu") -> None:
    reason = missing_tools_reason(tools, what)
    if reason:
        raise ToolMissing(reason)


# ----------------------------------------------------------------------------- compile metrics

_QF_ARITH = re.compile(r"\.qf(16|32)\s*=\s*v(mpy|add|sub)\w*\(")
_QF_CONVERT = re.compile(
    r"\bv\d+(:\d+)?\.(hf|sf)\s*=\s*v\d+(:\d+)?\.qf(16|32)\s*$"     # qf -> IEEE
    r"|\bv\d+(:\d+)?\.qf(16|32)\s*=\s*v\d+(:\d+)?\.(hf|sf)\s*$"    # IEEE -> qf
    r"|\bvconv\w*\(|\bvcvt\w*\(.*\.qf"
)
_HVX_FP = re.compile(r"\bv\d+(:\d+)?\.(hf|sf|qf16|qf32)\b")
_SCALAR_FP = re.compile(r"=\s*(sf|df)[a-z]+\w*\(|\b(sf|df)cmp\.|=\s*convert_\w+\(")
_FP16_CALL = re.compile(r"\bcall\s+(__extendhfsf2|__truncsfhf2|__gnu_h2f_ieee|__gnu_f2h_ieee)\b")


def _instruction_lines(asm: str):
    for raw in asm.splitlines():
        line = raw.split("//")[0].strip()
        if not line or line.startswith(".") or line.endswith(":"):
            continue
        line = line.strip("{} \t")
        if line.startswith(":endloop") or not line:
            continue
        yield line


def asm_metrics(asm: str) -> dict:
    """Instruction counts read from Hexagon assembly text."""
    counts = dict.fromkeys(
        ("instructions", "qfloat_arith", "qfloat_convert", "qfloat_total", "hvx_fp_vector",
         "scalar_fp", "fp16_conversion_calls"), 0)
    for line in _instruction_lines(asm):
        counts["instructions"] += 1
        if ".qf16" in line or ".qf32" in line:
            counts["qfloat_total"] += 1
        if _QF_ARITH.search(line):
            counts["qfloat_arith"] += 1
        if _QF_CONVERT.search(line):
            counts["qfloat_convert"] += 1
        if _HVX_FP.search(line):
            counts["hvx_fp_vector"] += 1
        if _SCALAR_FP.search(line):
            counts["scalar_fp"] += 1
        if _FP16_CALL.search(line):
            counts["fp16_conversion_calls"] += 1
    return counts


def elf_code_size(data: bytes) -> int:
    """Bytes of executable sections (SHF_EXECINSTR) of an ELF32 little-endian file."""
    if data[:4] != b"\x7fELF" or data[4] != 1:
        raise ValueError("not an ELF32 file")
    shoff = struct.unpack_from("<I", data, 0x20)[0]
    shentsize, shnum = struct.unpack_from("<HH", data, 0x2E)
    total = 0
    for i in range(shnum):
        _, sh_type, flags, _, _, size = struct.unpack_from("<IIIIII", data, shoff + i * shentsize)
        if flags & 0x4 and sh_type != 8:  # SHF_EXECINSTR, not NOBITS
            total += size
    return total


def elf_machine_flags(data: bytes) -> int:
    return struct.unpack_from("<I", data, 0x24)[0]


def codegen_metrics(object_path: Path, asm_path: Path | None) -> dict:
    data = Path(object_path).read_bytes()
    result = {"object_bytes": len(data), "code_bytes": elf_code_size(data),
              "e_flags": hex(elf_machine_flags(data))}
    if asm_path is not None and Path(asm_path).exists():
        result.update(asm_metrics(Path(asm_path).read_text(errors="replace")))
    return result


# ----------------------------------------------------------------------------- targets


class HexagonTarget(Target):
    """A compile-only Hexagon target with TVM's tag flags (HVX qfloat on)."""

    mode = Mode.COMPILE_ONLY
    codegen = True
    dtypes_note = ("on Hexagon, int8 runs on hexagon-v68-qf and hexagon-v73-qf (integer HVX under qemu-hexagon); "
                   "bfloat16 runs on llvm only (issue 61)")
    #: Records tuned on the emulated v68 (qfloat model) where there are some, else x86's.
    records_from = ("hexagon-v68-qf", "llvm")
    KERNEL_FILE = "kernel.o"

    def __init__(self, name: str, arch: str, mattr: list[str], llvm_options: list[str]):
        self.name = name
        self.arch = arch
        self.mattr = mattr
        self.llvm_options = llvm_options

    def tvm_target(self):
        return compat_build.hexagon_target(f"hexagon{self.arch}", self.mattr, self.llvm_options)

    def tuning_target(self):
        raise NotTunable(f"{self.name} cannot be tuned here (no Hexagon device to measure candidates on): "
                         f"tune hexagon-v68-qf, under the emulator; {self.name}'s tuned order replays its records")

    def identity(self) -> dict:
        return {"target": self.name, "mcpu": f"hexagon{self.arch}", "mattr": self.mattr,
                "llvm_options": self.llvm_options}

    def build(self, func, path: Path) -> None:
        """The Hexagon object at ``path`` and its assembly beside it (``.s``)."""
        module = compat_build.build(func, self.tvm_target())
        cache.write_file(path, lambda tmp: compat_build.write_module_file(module, tmp, "o"))
        cache.write_file(path.with_suffix(".s"), lambda tmp: compat_build.write_module_file(module, tmp, "s"))

    def codegen_metrics(self, path: Path) -> dict:
        return codegen_metrics(path, path.with_suffix(".s"))

    def packet_floor(self, multiply_accumulates: int, dtype: str) -> int | None:
        return packet_floor(multiply_accumulates, dtype) if multiply_accumulates else None

    def load(self, path, inputs, output_shape, dtype):
        raise TargetUnavailable(f"{self.name} is compile-only: no emulator here runs HVX floating point")


def tool_version(tool: str) -> str:
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return "missing"
    return out.strip().splitlines()[0] if out.strip() else "unknown"


class HexagonEmuTarget(HexagonTarget):
    """The executed variant: HVX floating point off, generated for v67 so QEMU 7.2 runs it."""

    mode = Mode.EMULATED

    def unavailable(self) -> str | None:
        return missing_tools_reason(what=self.name)

    def identity(self) -> dict:
        # No tool is run here: identity() must stay cheap (asv processes look records up by it).
        return {**super().identity(), "harness": cache.source_digest(HARNESS_SOURCE),
                "emulator": "qemu-hexagon"}

    def build(self, func, path: Path) -> None:
        """The object at ``path`` and the linked static ELF beside it (``.elf``)."""
        require_tools(("clang", "ld.lld"), self.name)
        module = compat_build.build(func, self.tvm_target())
        cache.write_file(path, lambda tmp: compat_build.write_module_file(module, tmp, "o"))
        harness = harness_object(self.arch)
        cache.write_file(path.with_suffix(".elf"), lambda tmp: link([path, harness], Path(tmp)))

    def codegen_metrics(self, path: Path) -> dict:
        return codegen_metrics(path, None)

    def load(self, path, inputs, output_shape, dtype):
        require_tools(("qemu-hexagon",), self.name)
        return EmulatedKernel(Path(path).with_suffix(".elf"), inputs, output_shape, dtype)


def harness_object(arch: str) -> Path:
    """The harness compiled for ``arch``, cached by the source and the clang version."""
    key = {"source": cache.source_digest(HARNESS_SOURCE), "clang": tool_version("clang"), "arch": arch}
    where = cache.entry("hexagon-harness", arch, key)
    if not cache.load_entry(where, ("harness.o",)):
        def compile_to(tmp):
            check_run(["clang", "--target=hexagon-unknown-linux-musl", f"-mcpu=hexagon{arch}", "-O2",
                        "-ffreestanding", "-fno-builtin", "-nostdlib", "-c", str(HARNESS_SOURCE),
                        "-o", tmp], "compiling the harness")
        cache.store_entry(where, {"harness.o": compile_to})
    return where / "harness.o"


def link(objects: list[Path], out: Path) -> None:
    """A static ELF of ``objects``, the kernel object first: its own fp16 conversions (weak) take
    precedence over the harness's."""
    check_run(["ld.lld", "-static", "-e", "_start", *map(str, objects), "-o", str(out)], "linking with ld.lld")


def check_run(command: list[str], what: str) -> None:
    """Run a build tool; RuntimeError with its first line of output when it fails."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        lines = [line for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        raise RuntimeError(f"{what} failed: {lines[0] if lines else done.returncode}")


# ----------------------------------------------------------------------------- execution


def encode_inputs(inputs, output_shape, dtype, ieee_twin: bool = False, fast_ticks: bool = False) -> bytes:
    """The harness's stdin: header words, then the raw input bytes. ``ieee_twin``: the linked HVX
    floating-point model computes as the IEEE twin (:mod:`suite.targets.ieee_twin`), not qfloat.
    ``fast_ticks``: the harness totals the execution counters every 20 microseconds, not every 20 ms."""
    arrays = [np.ascontiguousarray(a) for a in inputs]
    out_dtype = np.dtype(dtype)
    flags = (_FLAG_IEEE_TWIN if ieee_twin else 0) | (_FLAG_FAST_TICKS if fast_ticks else 0)
    words = [_MAGIC_IN, _PROTOCOL, flags, len(arrays) + 1]
    for array, is_input in [(a, 1) for a in arrays] + [(np.empty(0, out_dtype), 0)]:
        shape = array.shape if is_input else tuple(output_shape)
        words += [_TYPE_CODES[array.dtype.kind], array.dtype.itemsize * 8, len(shape), *shape, is_input]
    return struct.pack(f"<{len(words)}I", *words) + b"".join(a.tobytes() for a in arrays)


_ILLEGAL = re.compile(r"illegal instruction at pc (0x[0-9a-f]+)")


def objdump() -> str | None:
    """An llvm-objdump that disassembles Hexagon (Debian: apt-get install llvm), or None."""
    return next((t for t in ("llvm-objdump", *(f"llvm-objdump-{v}" for v in range(22, 13, -1)))
                 if shutil.which(t)), None)


def disassemble(path: Path, *options: str) -> str:
    """``llvm-objdump -d`` of a Hexagon object or ELF, v68 with HVX and qfloat."""
    tool = objdump()
    if tool is None:
        raise ToolMissing("disassembling Hexagon code needs llvm-objdump (on Debian: apt-get install llvm)")
    done = subprocess.run([tool, "-d", "--triple=hexagon", "--mcpu=hexagonv68",
                           "--mattr=+hvxv68,+hvx-length128b,+hvx-qfloat", *options, str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"llvm-objdump failed on {path}: {done.stderr.strip()[:200]}")
    return done.stdout


def instructions_from(elf: Path, pc: int, count: int = 256) -> list[tuple[int, str]] | None:
    """(address, instruction) of the ``count`` instruction words from ``pc`` of a linked Hexagon
    ELF (llvm-objdump, where installed); None when they cannot be read."""
    try:
        listing = disassemble(elf, f"--start-address={pc:#x}", f"--stop-address={pc + 4 * count:#x}")
    except (ToolMissing, RuntimeError):
        return None
    found = []
    for line in listing.splitlines():
        address = re.match(r"\s*([0-9a-f]+):\t", line)
        if address:
            found.append((int(address.group(1), 16), line.split("\t")[-1].strip("{} ").strip()))
    return found or None


def _illegal_message(name: str, elf: Path, pc: int) -> str:
    """QEMU raises SIGILL at the start of the translation block holding the packet it cannot
    decode, so the instruction is named as the first HVX floating-point one from there on."""
    listed = instructions_from(elf, pc)
    if listed is None:
        return f"{name}: illegal instruction at pc {pc:#x} (install llvm-objdump to name it)"
    floating = [(address, text) for address, text in listed if _HVX_FP.search(text)]
    if not floating:
        return f"{name}: illegal instruction at pc {pc:#x}: `{listed[0][1]}`"
    address, text = floating[0]
    return f"{name} cannot execute HVX floating point: `{text}` at {address:#x} (SIGILL in the block at {pc:#x})"


#: The form of an instruction that counts as the dot product: ``vrmpy`` of a uint8 vector by an
#: int8 one (``Vx.w += vrmpy(Vu.ub,Vv.b)``, the intrinsic's), not LLVM's own ``vrmpy`` by a scalar
#: (``v0.uw = vrmpy(v0.ub,r2.ub)``, which 15 of ResNet-18's 21 untuned int8 kernels hold).
INSTRUCTION_FORMS = {"vrmpy": r"\bvrmpy\(v\d+\.ub,\s*v\d+\.b\)"}


def _instruction_pattern(mnemonic: str):
    return re.compile(INSTRUCTION_FORMS.get(mnemonic, rf"\b{re.escape(mnemonic)}\("), re.IGNORECASE)


def mnemonic_count(path: Path, mnemonic: str) -> int:
    """How many ``mnemonic`` instructions (``vrmpy``, say, in its :data:`INSTRUCTION_FORMS` form) the
    disassembly of a Hexagon object or ELF holds (llvm-objdump; ToolMissing without it)."""
    pattern = _instruction_pattern(mnemonic)
    return sum(1 for line in disassemble(path).splitlines() if pattern.search(line))


_TB_EXECUTED = re.compile(r"^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/")
_TB_INSTRUCTION = re.compile(r"^0x([0-9a-f]+):\s")
#: A block logged as executed that exited before its first instruction (a signal was pending: the
#: harness's clock ticks) and runs again: QEMU logs this line after its ``Trace``.
_TB_STOPPED = re.compile(r"^Stopped execution of TB chain before 0x[0-9a-f]+ \[([0-9a-f]+)\]")


def executed_mnemonic_count(elf: Path, stdin: bytes, mnemonic: str, emulator=("qemu-hexagon",),
                            timeout_s: float = EMULATION_TIMEOUT_S) -> int:
    """How many ``mnemonic`` instructions a run of the ELF executes (the whole program: the harness
    has none of the kernel's vector dot products). QEMU's counters total packets and instructions,
    not opcodes, so this reads QEMU's own log instead: each translation block as translated
    (``-d in_asm``: its instructions, in QEMU's disassembly) and each execution of one (``exec``,
    with ``nochain`` so that every execution is logged), and adds the block's ``mnemonic``s per
    execution, less those of the executions QEMU stopped before the block's first instruction (a
    pending signal; the block runs again, logged again). The log streams through a pipe (a tuned kernel's runs to millions of lines); it is
    slower than a plain run, and meant for one run of a kept kernel."""
    pattern = _instruction_pattern(mnemonic)
    command = [*emulator, "-d", "in_asm,exec,nochain", "-D", "/dev/stderr", str(elf)]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=False)
    timer = threading.Timer(timeout_s, proc.kill)
    timer.start()

    def feed():
        try:
            proc.stdin.write(stdin)
        except OSError:
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    out: list[bytes] = []
    workers = [threading.Thread(target=feed, daemon=True),
               threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)]
    for worker in workers:
        worker.start()
    in_block, block_pc, in_block_count = False, None, 0
    per_block: dict[int, int] = {}
    executed = 0
    try:
        for raw in proc.stderr:
            line = raw.decode(errors="replace")
            if line.startswith("IN:"):
                in_block, block_pc, in_block_count = True, None, 0
                continue
            if in_block:
                if found := _TB_INSTRUCTION.match(line):
                    block_pc = int(found.group(1), 16) if block_pc is None else block_pc
                    in_block_count += bool(pattern.search(line))
                    continue
                if not line.strip():
                    if block_pc is not None:
                        per_block[block_pc] = in_block_count
                    in_block = False
                continue
            if found := _TB_EXECUTED.match(line):
                executed += per_block.get(int(found.group(1), 16), 0)
            elif found := _TB_STOPPED.match(line):
                executed -= per_block.get(int(found.group(1), 16), 0)
    finally:
        status = proc.wait()
        timer.cancel()
        for worker in workers:
            worker.join()
    if status != 0:
        raise EmulationFailed(f"{Path(emulator[0]).name} exit {status} while counting {mnemonic} executed")
    return executed


@dataclass
class Emulation:
    """One run of a kernel under the emulator."""

    output: np.ndarray
    emulated_s: float  #: the harness's clock around the call (host wall time under QEMU)
    cpu_s: float  #: CPU seconds the emulator process used, start to exit (load on the host does not add to it)
    counts: dict  #: COUNTS of the call: packets, instructions, HVX instructions executed (exact)


def emulate(elf: Path, stdin: bytes, output_shape, dtype, emulator=("qemu-hexagon",),
            timeout_s: float = EMULATION_TIMEOUT_S) -> Emulation:
    """Run the ELF under ``emulator`` (a qemu-hexagon command): the output, the seconds of the
    call and of the emulator process, and the call's execution counts. EmulationFailed names the
    instruction an emulator could not execute."""
    name = Path(emulator[0]).name
    returncode, stdout, stderr, cpu_s = _run_counting_cpu([*emulator, str(elf)], stdin, timeout_s, name)
    text = stderr.decode(errors="replace")
    err = text.strip().splitlines()
    if found := _ILLEGAL.search(text):
        raise EmulationFailed(_illegal_message(name, elf, int(found.group(1), 16)))
    if "decode_insns" in text:  # QEMU 10.0 aborts in its decoder instead of raising SIGILL
        raise EmulationFailed(f"{name} aborted decoding an instruction it does not implement "
                              f"({err[-1].strip() if err else 'decode.c'})")
    if returncode != 0 or len(stdout) < _TRAILER.size:
        raise EmulationFailed(f"{name} exit {returncode}: {err[-1] if err else 'no message'}")
    magic, status, elapsed_ns, *counts = _TRAILER.unpack_from(stdout)
    if magic != _MAGIC_OUT or status != 0:
        raise EmulationFailed(f"kernel status {status}: {err[-1] if err else 'no message'}")
    count = int(np.prod(output_shape))
    data = np.frombuffer(stdout, dtype=dtype, count=count, offset=_TRAILER.size)
    return Emulation(data.reshape(tuple(output_shape)).copy(), elapsed_ns / 1e9, cpu_s, dict(zip(COUNTS, counts)))


def _run_counting_cpu(command: list[str], stdin: bytes, timeout_s: float, name: str):
    """(exit status, stdout, stderr, CPU seconds) of a command fed ``stdin``; the process is
    reaped with ``wait4`` for its own resource usage. EmulationFailed when it cannot be started
    or runs past ``timeout_s`` (then it is killed)."""
    try:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    except OSError as err:
        raise EmulationFailed(f"{name} could not be started: {err}") from None
    chunks: dict[str, bytes] = {}

    def feed():
        try:
            proc.stdin.write(stdin)
        except OSError:  # it exited without reading everything; its status says why
            pass
        finally:
            try:
                proc.stdin.close()
            except OSError:
                pass

    def drain(stream, key):
        chunks[key] = stream.read()

    workers = [threading.Thread(target=feed, daemon=True),
               threading.Thread(target=drain, args=(proc.stdout, "out"), daemon=True),
               threading.Thread(target=drain, args=(proc.stderr, "err"), daemon=True)]
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                raise EmulationFailed(f"{name} ran past {timeout_s:g} s")
            time.sleep(0.02)
    except BaseException:  # past its time, or this process interrupted: the emulator goes too
        proc.kill()
        os.wait4(proc.pid, 0)
        proc.returncode = -9
        for worker in workers:
            worker.join()
        raise
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    for worker in workers:
        worker.join()
    proc.stdout.close()
    proc.stderr.close()
    return proc.returncode, chunks.get("out", b""), chunks.get("err", b""), usage.ru_utime + usage.ru_stime


def emulator_identity(emulator) -> dict:
    """What distinguishes one emulator binary from another, cheaply (no run): path, size, mtime."""
    path = shutil.which(emulator[0]) or emulator[0]
    try:
        stat = Path(path).stat()
        return {"emulator": [str(path), *emulator[1:]], "size": stat.st_size, "mtime": stat.st_mtime_ns}
    except OSError:
        return {"emulator": [str(path), *emulator[1:]]}


class EmulatedKernel(Kernel):
    """An ELF bound to its inputs; runs under qemu-hexagon once, outputs cached by content.
    ``ieee_twin``: its HVX floating-point model computes as the IEEE twin (same ELF)."""

    def __init__(self, elf: Path, inputs, output_shape, dtype, emulator=("qemu-hexagon",), ieee_twin=False):
        self.elf, self.output_shape, self.dtype = Path(elf), list(output_shape), dtype
        self.emulator = tuple(emulator)
        self.stdin = encode_inputs(inputs, output_shape, dtype, ieee_twin)
        who = cache.digest(emulator_identity(self.emulator)).encode()
        digest = hashlib.sha256(self.elf.read_bytes() + self.stdin + who).hexdigest()[:24]
        self.where = cache.root() / "hexagon-run" / digest
        self.emulated_s: float | None = None

    def run(self) -> None:
        self.output()

    def output(self) -> np.ndarray:
        found = cache.load_entry(self.where, ("output.npy", "run.json"))
        if found:  # a verified entry: a damaged one is emulated again
            cached, info = cache.read_array(found["output.npy"]), cache.read_json(found["run.json"])
            if (cached is not None and cached.shape == tuple(self.output_shape) and isinstance(info, dict)
                    and set(info.get("counts") or ()) == set(COUNTS)):
                self.emulated_s, self.counts = info["emulated_s"], info["counts"]
                return cached
        run = emulate(self.elf, self.stdin, self.output_shape, self.dtype, self.emulator)
        info = {"emulated_s": run.emulated_s, "counts": run.counts}
        cache.store_entry(self.where, {"output.npy": lambda tmp: np.save(tmp, run.output, allow_pickle=False),
                                       "run.json": lambda tmp: Path(tmp).write_text(json.dumps(info))})
        self.emulated_s, self.counts = run.emulated_s, run.counts
        return run.output

    def time(self, repeat: int = 1) -> list[float]:
        """Emulated seconds of the call (QEMU on this host: not hardware latency), measured once."""
        self.output()
        return [self.emulated_s]


V68_MATTR = ["+hvxv68", "+hvx-length128b", "+hvx-qfloat", "-hvx-ieee-fp"]


def all_targets() -> list:
    """hexagon-v68/v69/v73 (compile-only, qfloat) and hexagon-v68-emu (executed)."""
    found = [HexagonTarget("hexagon-v68", "v68", V68_MATTR,
                           TVM_HEXAGON_BUILD_OPTIONS + ["-force-hvx-float"])]
    for arch in ("v69", "v73"):
        found.append(HexagonTarget(f"hexagon-{arch}", arch,
                                   [f"+hvx{arch}", "+hvx-length128b", "+hvx-qfloat", "-hvx-ieee-fp"],
                                   list(TVM_HEXAGON_BUILD_OPTIONS)))
    # Executed: HVX v67 has no floating point (the v68 build with -hvx-qfloat,-hvx-ieee-fp).
    found.append(HexagonEmuTarget("hexagon-v68-emu", "v67", ["+hvxv67", "+hvx-length128b"],
                                  list(TVM_HEXAGON_BUILD_OPTIONS)))
    return found
