"""A kernel's code identity (suite.targets.elf.code_digest): the same for the same executed code
whatever the paths, debug information and symbol names around it; different when an instruction,
a constant or a relocation's target changes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from suite.targets import elf

CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler to make objects with")

SOURCE = """
extern float bias(int);
float scale = 1.5f;
float kernel(const float *x, int n) {
    float s = 0;
    for (int i = 0; i < n; ++i) s += x[i] * %s;
    return s + bias(n);
}
"""


def compile_in(where: Path, source: str, *flags: str, shared: bool = False) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "k.c").write_text(source)
    out = where / ("k.so" if shared else "k.o")
    command = [CC, "-O2", "-fPIC", *flags, "k.c", "-o", out.name]
    command += ["-shared"] if shared else ["-c"]
    subprocess.run(command, cwd=where, check=True, capture_output=True)
    return out


def test_the_same_code_built_elsewhere_with_debug_information_is_the_same(tmp_path):
    a = compile_in(tmp_path / "a", SOURCE % "scale", "-g")
    b = compile_in(tmp_path / "somewhere" / "else" / "b", SOURCE % "scale", "-g")
    assert a.read_bytes() != b.read_bytes()  # the paths in the debug information differ
    assert elf.code_digest(a) == elf.code_digest(b)
    stripped = compile_in(tmp_path / "c", SOURCE % "scale")
    assert elf.code_digest(stripped) == elf.code_digest(a)  # debug sections never count


def test_a_renamed_kernel_is_noise_but_a_changed_constant_is_not(tmp_path):
    # TVM numbers its PrimFuncs by occurrence (fused_conv2d14_add8): a new name is no new code.
    base = elf.code_digest(compile_in(tmp_path / "a", SOURCE % "scale"))
    assert elf.code_digest(compile_in(tmp_path / "b", SOURCE.replace("kernel", "fused_kernel_7") % "scale")) == base
    assert elf.code_digest(compile_in(tmp_path / "c", SOURCE.replace("1.5f", "2.5f") % "scale")) != base
    assert elf.code_digest(compile_in(tmp_path / "d", SOURCE % "2.0f")) != base


def test_a_call_to_another_function_changes_the_object_s_identity(tmp_path):
    # In a relocatable object the call's bytes are the same placeholder: only the relocation tells.
    a = compile_in(tmp_path / "a", SOURCE % "scale")
    b = compile_in(tmp_path / "b", SOURCE.replace("bias", "offset") % "scale")
    assert elf.code_digest(a) != elf.code_digest(b)


def test_shared_libraries_have_an_identity_too(tmp_path):
    a = compile_in(tmp_path / "a", SOURCE.replace("extern float bias(int);", "float bias(int n) { return n; }")
                   % "scale", "-g", shared=True)
    b = compile_in(tmp_path / "elsewhere" / "b", SOURCE.replace("extern float bias(int);",
                                                                "float bias(int n) { return n; }") % "scale",
                   "-g", shared=True)
    assert elf.code_digest(a) == elf.code_digest(b)


@pytest.mark.parametrize("content", [b"", b"not an object", b"\x7fELF" + b"\x02\x02" + bytes(60)])
def test_what_is_no_little_endian_elf_is_refused(tmp_path, content):
    path = tmp_path / "x.o"
    path.write_bytes(content)
    with pytest.raises(elf.NotELF):
        elf.code_digest(path)


# ----------------------------------------------------------------------------- the gate, on code identities

from histories import A, B, SAMPLES, SEED, TUNED, Builder  # noqa: E402
from suite.reporting import code_identity, gate  # noqa: E402
from suite.reporting import thresholds as limits  # noqa: E402
from suite.reporting.gate_result import Status, Verdict  # noqa: E402

CODE_A, CODE_B = "a" * 64, "b" * 64


def two_runs(scale_b: float, code_b: str, ulp_b: float = 10.0) -> Builder:
    b = Builder()
    for commit, scale, code, ulp in ((A, 1.0, CODE_A, 10.0), (B, scale_b, code_b, ulp_b)):
        b.accurate(SEED, commit, ulp_mean=ulp).timing(SEED, commit, [s * scale for s in SAMPLES]).code(SEED, commit, code)
    return b


def never_called(series, timings):
    raise AssertionError("a kernel whose code is the same was timed again")


def test_a_latency_step_of_the_same_code_is_noise_and_never_timed_again():
    result = gate.evaluate_named(two_runs(1.5, CODE_A).history(), B, limits.load(), remeasure=never_called)
    latency = next(c for c in result.checks if c.name.startswith("latency vs"))
    assert result.verdict is Verdict.READY and latency.status is Status.PASS
    assert latency.details[0].startswith(f"same code: {' '.join(SEED)}: 1.50x")
    code = next(c for c in result.checks if c.name.startswith("kernel code vs"))
    assert (code.status, code.worst) == (Status.PASS, "0 of 1 changed")


def test_a_latency_step_of_changed_code_is_still_a_suspect():
    result = gate.evaluate_named(two_runs(1.5, CODE_B).history(), B, limits.load())
    assert result.verdict is Verdict.UNDECIDED  # not timed again here: the suspect stays one
    code = next(c for c in result.checks if c.name.startswith("kernel code vs"))
    assert code.worst == "1 of 1 changed" and code.notes == (f"changed: {' '.join(SEED)}",)


def test_a_deterministic_metric_that_moves_under_the_same_code_is_the_suites_bug():
    with pytest.raises(code_identity.NotDeterministic) as found:
        gate.evaluate_named(two_runs(1.0, CODE_A, ulp_b=10.5).history(), B, limits.load())
    assert "ulp_mean of seed.conv2d_nhwc_7x7s2 float16 llvm default is 10.0" in str(found.value)
    assert "and 10.5 at" in str(found.value) and "same code" in str(found.value)
    # the same move with changed code is TVM's news, judged by the gate's rules: [change.ulp_mean]
    news = gate.evaluate_named(two_runs(1.0, CODE_B, ulp_b=10.5).history(), B, limits.load())
    ulp = next(c for c in news.checks if c.name.startswith("ulp_mean vs"))
    assert news.verdict is Verdict.NOT_READY and ulp.status is Status.FAIL and "10 -> 10.5" in ulp.details[0]


def test_gate_and_report_refuse_a_non_deterministic_history_in_one_line(tmp_path, capsys):
    from suite import cli

    results = two_runs(1.0, CODE_A, ulp_b=10.5).write(tmp_path / "run")
    for argv in (["gate", "--results", str(results), "--commit", B[:8], "--no-remeasure"],
                 ["report", "--results", str(results), "--out", str(tmp_path / "report")]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("tvm-suite: error: ulp_mean of"), err


def test_the_report_lists_per_commit_which_kernels_changed():
    b = two_runs(1.0, CODE_B)
    b.accurate(TUNED, A).accurate(TUNED, B).code(TUNED, A, "c" * 64).code(TUNED, B, "c" * 64)
    changes = code_identity.per_commit(b.history())
    assert [(c.commit.hash, c.baseline and c.baseline.hash) for c in changes] == [(A, None), (B, A)]
    assert [s.ids for s in changes[1].changed] == [SEED] and changes[1].same == 1


def test_the_report_shows_the_kernels_whose_code_changed(tmp_path):
    from suite import cli

    results = two_runs(1.0, CODE_B).write(tmp_path / "run")
    assert cli.main(["report", "--results", str(results), "--out", str(tmp_path / "report")]) == 0  # READY
    facts = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [(c["changed"], c["same"]) for c in facts["code_changes"]] == [([], 0), ([" ".join(SEED)], 0)]
    html = (tmp_path / "report" / "index.html").read_text()
    assert 'id="code-changes-table"' in html and " ".join(SEED) in html
