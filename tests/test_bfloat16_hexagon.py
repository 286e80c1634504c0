"""bfloat16 on Hexagon v73 (docs/bfloat16.md): HVX v73 has bf16 instructions, but TVM emits none for
a bfloat16 workload built for ``+hvxv73`` (it computes in float32 before LLVM), so hexagon-v73-qf
records bfloat16 as skipped with that reason. The test checks that the reason still holds: a
bfloat16 matmul built for v73 (4 s, TVM's own LLVM, no Hexagon tool needed) has no bf16 instruction."""

import re

from suite.core import measurement, workloads
from suite.core.combo import Combo
from suite.core.record import Status
from suite.targets import get as target

#: The classifier: a multiply-add reduction, a bias add (HVX) and conversions to and from bfloat16.
MATMUL = "resnet18.matmul_add.512-1000"


def instructions(assembly: str) -> list[str]:
    return [line.strip() for line in assembly.splitlines() if line.startswith("\t") and not line.strip().startswith(".")]


def test_tvm_emits_no_hvx_bf16_for_v73_and_the_qf_target_skips_bfloat16_saying_so(tmp_path):
    v73, qf = target("hexagon-v73"), target("hexagon-v73-qf")
    assert "+hvxv73" in v73.mattr and qf.mattr == v73.mattr and qf.llvm_options == v73.llvm_options
    workload = workloads.get(MATMUL)
    v73.build(workloads.prim_func(workload, "bfloat16"), tmp_path / "kernel.o")
    code = instructions((tmp_path / "kernel.s").read_text())
    assert len(code) > 1000
    assert not [line for line in code if re.search(r"\.bf\b", line)]  # no vmpy(Vu.bf,Vv.bf), no vcvt to .bf
    assert sum("sfmpy" in line for line in code) > 0  # the products: scalar float32
    assert sum(bool(re.search(r"\bv\d+\.(sf|qf32)\b", line)) for line in code) > 0  # the bias add: HVX float32
    record = measurement.measure(Combo.resolve(MATMUL, "bfloat16", "hexagon-v73-qf"))
    assert record.status is Status.SKIPPED
    assert record.reason.startswith("hexagon-v73-qf does not run bfloat16: TVM emits no HVX bf16 instruction")
    assert "0 .bf instructions" in record.reason
