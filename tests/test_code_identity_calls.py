"""What a shared object calls is part of its code identity (suite.targets.elf): its dynamic symbols by
name and version, and the dynamic relocations that bind them; two builds of the same code, here or
in another directory, with or without debug information and build ids, keep one identity. An
identity names its scheme, and identities of two schemes (a history kept by an older suite, a
candidate measured now) are not comparable: never "same", never "changed"
(suite.reporting.code_identity), in the gate, the report and the history's per-commit changes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from histories import SAMPLES, SEED, A, B, Builder, C

from suite import cli
from suite.reporting import code_identity, gate, gate_result
from suite.reporting import thresholds as limits
from suite.reporting.gate_result import Status, Verdict
from suite.reporting.rules import Slowness
from suite.targets import elf

CC = shutil.which("cc") or shutil.which("gcc")
#: (compiler, its flags to link with its linker): the system's (GNU ld), and clang with lld.
LINKERS = [pytest.param([CC], id="cc", marks=pytest.mark.skipif(CC is None, reason="no C compiler")),
           pytest.param(["clang", "-fuse-ld=lld"], id="clang-lld", marks=pytest.mark.skipif(
               not (shutil.which("clang") and shutil.which("ld.lld")), reason="no clang with lld"))]
#: Three callees: TVM's workspace allocator, a misspelt name of it and another function altogether.
CALLEES = ("__TVMBackendAllocWorkspace", "__TVMBackendAllocWorkspaec", "malloc_hugepage_zero")
#: A kernel calling another library's function (through the PLT: its bytes the same whatever the name).
IMPORTED = """
extern void *%(callee)s(int, int, unsigned long, int, int);
int kernel(float *out, int n) {
    float *w = (float *)%(callee)s(1, 0, (unsigned long)n * 4, 2, 32);
    if (!w) return -1;
    for (int i = 0; i < n; ++i) { w[i] = i * 0.5f; out[i] = w[i] + 1.0f; }
    return 0;
}
"""
#: A kernel as TVM links one: the call goes through a pointer the object defines and TVM's runtime
#: fills by its name (through the GOT: the bytes the same whatever the name).
POINTER = """
typedef void *(*alloc_fn)(int, int, unsigned long, int, int);
__attribute__((weak)) alloc_fn %(callee)s = 0;
int kernel(float *out, int n) {
    float *w = (float *)%(callee)s(1, 0, (unsigned long)n * 4, 2, 32);
    if (!w) return -1;
    for (int i = 0; i < n; ++i) { w[i] = i * 0.5f; out[i] = w[i] + 1.0f; }
    return 0;
}
"""


def shared_object(where: Path, source: str, compiler: list[str], *flags: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    (where / "k.c").write_text(source)
    subprocess.run([*compiler, "-O2", "-fPIC", "-shared", *flags, "k.c", "-o", "k.so"], cwd=where, check=True,
                   capture_output=True)
    return where / "k.so"


@pytest.mark.parametrize("compiler", LINKERS)
@pytest.mark.parametrize("source", [IMPORTED, POINTER], ids=["imported", "pointer"])
def test_shared_objects_calling_three_functions_have_three_identities(tmp_path, compiler, source):
    built = [shared_object(tmp_path / callee, source % {"callee": callee}, compiler) for callee in CALLEES]
    identities = [elf.code_digest(path) for path in built]
    assert len(set(identities)) == 3, identities
    assert all(elf.scheme_of(identity) == elf.SCHEME == 2 and identity.startswith("v2:") for identity in identities)


@pytest.mark.parametrize("compiler", LINKERS)
def test_builds_of_the_same_code_keep_one_identity(tmp_path, compiler):
    source = POINTER % {"callee": CALLEES[0]}
    plain = shared_object(tmp_path / "a", source, compiler)
    others = [shared_object(tmp_path / "b" / "elsewhere", source, compiler, "-g", "-Wl,--build-id=uuid"),
              shared_object(tmp_path / "c", source, compiler, "-Wl,--build-id=none"),
              shared_object(tmp_path / "d", source, compiler, "-Wl,--build-id=md5")]
    assert all(path.read_bytes() != plain.read_bytes() for path in others)  # build ids, debug information
    assert {elf.code_digest(path) for path in others} == {elf.code_digest(plain)}


def test_two_tvm_builds_of_a_kernel_have_one_identity(tmp_path):
    """The seed conv2d as the llvm target builds it (its tuned order calls TVM's workspace
    allocator through the pointers TVM's runtime fills by name), built twice in two directories,
    and once more linked with debug information, a random build id and another work directory."""
    from suite import targets
    from suite.compat import build
    from suite.core import execution, schedules, workloads

    llvm, workload = targets.get("llvm"), workloads.seed_workload()
    func = schedules.apply(workloads.prim_func(workload, "float32"), "tuned", workload.id, "float32",
                           llvm.records_from)
    paths = [tmp_path / "one" / "k.so", tmp_path / "two" / "deeper" / "k.so"]
    for path in paths:
        path.parent.mkdir(parents=True)
        built = execution.build(llvm, func, path, "tuned")
        assert built.failure is None, built.failure
    relinked = tmp_path / "three" / "k.so"
    (tmp_path / "work").mkdir()
    relinked.parent.mkdir()
    build.build(llvm.prepare(func, "tuned"), llvm.tvm_target()).export_library(
        str(relinked), options=["-g", "-Wl,--build-id=uuid"], workspace_dir=str(tmp_path / "work"))
    assert relinked.read_bytes() != paths[0].read_bytes()
    identities = {elf.code_digest(path) for path in [*paths, relinked]}
    assert len(identities) == 1 and elf.scheme_of(identities.pop()) == 2
    # what it calls is in it: its dynamic symbols name the pointer the runtime fills
    assert b"__TVMBackendAllocWorkspace" in paths[0].read_bytes()


@pytest.mark.parametrize("text, scheme", [("a" * 64, 1), ("v2:" + "a" * 64, 2), ("v3:" + "0" * 64, 3),
                                          ("v1:" + "a" * 64, None), ("v2:" + "A" * 64, None), ("v2:abc", None),
                                          ("2:" + "a" * 64, None), ("", None)])
def test_an_identity_names_its_scheme(text, scheme):
    assert elf.scheme_of(text) == scheme


# ----------------------------------------------------------------------------- two schemes in one history

OLD, NEW, NEWER = "a" * 64, "v2:" + "b" * 64, "v2:" + "c" * 64  # scheme 1 (kept before), scheme 2


def two_runs(scale_b: float = 1.0, ulp_b: float = 10.0, code_b: str = NEW) -> Builder:
    """A baseline kept by an older suite (a bare sha256) and a candidate measured now (``v2:``)."""
    b = Builder()
    for commit, scale, code, ulp in ((A, 1.0, OLD, 10.0), (B, scale_b, code_b, ulp_b)):
        b.accurate(SEED, commit, ulp_mean=ulp).timing(SEED, commit, [s * scale for s in SAMPLES]).code(SEED, commit, code)
    return b


def never_called(series, timings):
    raise AssertionError("a kernel whose code is not known to have changed was timed again")


def code_check(result) -> gate_result.Check:
    return next(c for c in result.checks if c.name.startswith("kernel code vs"))


def test_an_old_identity_and_a_new_one_are_not_comparable():
    history = two_runs().history()
    # not "changed": a kernel whose kept samples are not slower is not sent to be timed again
    result = gate.evaluate_named(history, B, limits.load(), remeasure=never_called)
    check = code_check(result)
    assert (check.status, check.worst) == (Status.NOT_CHECKED, "1 not comparable (identities of two schemes)")
    assert check.notes == ()  # nothing listed as changed
    assert result.verdict is Verdict.READY
    assert result.line() == (f"verdict: READY (code of 1 kernel not compared: identities of two schemes) for "
                             f"{B[:10]} against {A[:10]} -> exit 0")
    assert code_identity.compare(history, history.series()[0], A, B) is code_identity.Code.NOT_COMPARABLE


def test_a_latency_step_across_two_schemes_is_no_same_code_noise():
    result = gate.evaluate_named(two_runs(scale_b=1.5).history(), B, limits.load())
    latency = next(c for c in result.checks if c.name.startswith("latency vs"))
    assert [s.verdict for s in result.slowdowns] == [Slowness.SUSPECT]  # not timed again here: still one
    assert result.verdict is Verdict.UNDECIDED and latency.details[0].startswith("suspect: ")


def test_a_deterministic_metric_that_moves_across_two_schemes_is_judged_not_refused():
    # the suite's own bug only under the same code: across two schemes the code is not known to be
    # the same, so the move is judged by the rules ([change.ulp_mean])
    result = gate.evaluate_named(two_runs(ulp_b=10.5).history(), B, limits.load())
    ulp = next(c for c in result.checks if c.name.startswith("ulp_mean vs"))
    assert result.verdict is Verdict.NOT_READY and ulp.status is Status.FAIL


def test_a_history_of_two_schemes_says_where_they_meet(tmp_path, capsys):
    b = Builder(commits=(A, B, C))
    for commit, code in ((A, OLD), (B, NEW), (C, NEW)):
        b.accurate(SEED, commit).timing(SEED, commit).code(SEED, commit, code)
    changes = code_identity.per_commit(b.history())
    assert [(c.commit.hash, len(c.changed), c.same, c.not_comparable, c.unknown) for c in changes] == [
        (A, 0, 0, 0, 0), (B, 0, 0, 1, 0), (C, 0, 1, 0, 0)]
    results = b.write(tmp_path / "run")  # sealed and loaded back: a v2 identity is a code identity
    assert cli.main(["gate", "--results", str(results), "--commit", B[:8], "--baseline", A[:8],
                     "--no-remeasure", "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    check = next(c for c in verdict["checks"] if c["name"].startswith("kernel code vs"))
    assert (check["status"], check["worst"]) == ("NOT CHECKED", "1 not comparable (identities of two schemes)")
    assert verdict["caveats"] == ["code of 1 kernel not compared: identities of two schemes"]
    assert cli.main(["report", "--results", str(results), "--out", str(tmp_path / "report")]) == 0
    facts = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [(c["changed"], c["same"], c["not_comparable"]) for c in facts["code_changes"]] == [
        ([], 0, 0), ([], 0, 1), ([], 1, 0)]
    page = (tmp_path / "report" / "index.html").read_text()
    assert page.count("(1 not comparable: identities of two schemes)") == 1  # B's row, never "none" alone


def test_two_new_identities_compare_as_ever():
    same = gate.evaluate_named(two_runs(scale_b=1.5).code(SEED, A, NEW).history(), B, limits.load(),
                               remeasure=never_called)
    assert code_check(same).worst == "0 of 1 changed" and same.verdict is Verdict.READY
    changed = gate.evaluate_named(two_runs().code(SEED, A, NEWER).history(), B, limits.load())
    assert code_check(changed).worst == "1 of 1 changed" and code_check(changed).status is Status.PASS


@pytest.mark.parametrize("text", ["v1:" + "a" * 64, "v2:" + "z" * 64])
def test_a_kept_text_that_is_no_identity_is_refused_in_one_line(tmp_path, capsys, text):
    results = two_runs(code_b=text).write(tmp_path / "run")
    assert cli.main(["gate", "--results", str(results), "--commit", B[:8], "--no-remeasure"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a code identity" in err[0], err
