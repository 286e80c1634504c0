"""The two TVM bugs the int8 fuzz campaign found (docs/int8-tuned.md, "TVM bugs found"), each at its
smallest, run against the installed TVM: for each reproducer, the pass that raised and TVM's
message, or that it now builds. TVM's own API only (no suite code), so that each reproducer can be
pasted into a TVM issue as it is.

    python experiments/int8_tvm_bugs.py            # the two bare TIR programs (seconds)
    python experiments/int8_tvm_bugs.py --intrin   # also the tensorized schedules, VNNI and vrmpy
                                                   # (TVM's tensor intrinsics: a minute to import)
"""

import sys

import tvm
from tvm import s_tir, te
from tvm.script import tirx as T


@T.prim_func
def vector_operand_in_vectorized_loop(a: T.Buffer((2,), "int32"), b: T.Buffer((4,), "int32"),
                                      c: T.Buffer((4,), "int32")):
    for j in T.vectorized(2):  # a's 2 lanes do not depend on j, b's and c's do
        c[T.Ramp(j * 2, 1, 2)] = a[T.Ramp(0, 1, 2)] + b[T.Ramp(j * 2, 1, 2)]


@T.prim_func
def vectorized_loop_in_vectorized_loop(c: T.Buffer((4,), "int32")):
    for i in T.vectorized(2):
        for j in T.vectorized(2):
            c[i * 2 + j] = 0


def tensorized_in_vectorized_loop(intrinsic: str, lanes: int):
    """c[1, 2 * lanes] = a[1, 4] x b (uint8 x int8 -> int32, b in the intrinsic's lanes x 4 blocks),
    the loop over the two blocks vectorized, each block tensorized with ``intrinsic``."""
    a = te.placeholder((1, 4), "uint8", name="a")
    b = te.placeholder((2, 1, lanes, 4), "int8", name="b")
    k = te.reduce_axis((0, 4), "k")
    c = te.compute((1, 2 * lanes), lambda i, j: te.sum(
        a[i, k].astype("int32") * b[j // lanes, k // 4, j % lanes, k % 4].astype("int32"), axis=k), name="c")
    sch = s_tir.Schedule(te.create_prim_func([a, b, c]))
    block = sch.get_sblock("c")
    i, j, kk = sch.get_loops(block)
    jo, ji = sch.split(j, [None, lanes])
    ko, ki = sch.split(kk, [None, 4])
    sch.reorder(i, ko, jo, ji, ki)
    sch.vectorize(jo)
    sch.decompose_reduction(block, ko)
    sch.tensorize(ji, intrinsic)
    return sch.mod


@tvm.ir.instrument.pass_instrument
class Running:
    """The passes started and not ended: after a build that raised, the last is the one that raised."""

    def __init__(self):
        self.stack = []

    def run_before_pass(self, _mod, info):
        self.stack.append(info.name)

    def run_after_pass(self, _mod, _info):
        self.stack.pop()


def attempt(name: str, mod, target) -> None:
    running = Running()
    try:
        with tvm.transform.PassContext(instruments=[running]):
            tvm.compile(mod, target=target)
    except tvm.error.InternalError as err:
        inner = [p for p in running.stack if p not in ("_pipeline", "sequential")]
        where = inner[-1] if inner else "code generation"
        print(f"{name}: InternalError in {where}: {str(err).strip().splitlines()[-1]}")
        return
    print(f"{name}: builds")


def main() -> int:
    attempt("vector_operand_in_vectorized_loop", vector_operand_in_vectorized_loop, "llvm")
    attempt("vectorized_loop_in_vectorized_loop", vectorized_loop_in_vectorized_loop, "llvm")
    if "--intrin" in sys.argv:
        import tvm.s_tir.tensor_intrin  # noqa: F401  registers dot_16x4_vnni and the vrmpy ones

        attempt("dot_16x4_vnni_in_vectorized_loop", tensorized_in_vectorized_loop("dot_16x4_vnni", 16), "llvm")
        hexagon = {"kind": "llvm", "mtriple": "hexagon", "mcpu": "hexagonv68", "mattr": ["+hvxv68", "+hvx-length128b"]}
        attempt("vrmpy_in_vectorized_loop", tensorized_in_vectorized_loop("dot_32x4_u8i8i32_vrmpy", 32), hexagon)
    return 0


if __name__ == "__main__":
    sys.exit(main())
