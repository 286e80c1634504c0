"""Faults of data the suite keeps and reads back: each kind is sealed, or refused, never trusted
as found. Each row a kind of fault and the tests that show it is handled."""

import hashlib
import json
import shutil
from pathlib import Path

from conftest import check_fault_table, one_line

FAULTS = {
    "a fuzz journal line edited (REORDERED to CHANGED), damaged or of a shape no campaign writes: one line "
    "naming the journal and the line, exit 2; the table comes from verified lines only": [
        "test_a_fuzz_journal_is_read_only_as_it_was_sealed", "test_a_fuzz_journal_line_of_an_unknown_shape_is_refused"],
    "a dangling link among the gate's kept re-timings (runs/.gate/): one line naming it and what to do": [
        "test_a_dangling_link_among_the_gates_records_is_one_line_naming_it"],
    "a cache entry copied under another key (another input, another TVM build): absent, computed again, never "
    "reused": [
        "test_a_model_input_copied_over_another_is_computed_again",
        "test_a_measurement_copied_under_another_key_is_measured_again",
        "test_a_verified_entry_copied_under_another_key_is_absent"],
    "asv's machine file, its benchmark list or a build note or log edited, removed or added in a kept history: "
    "one line naming the file, exit 2; a keep never seals the edit again": [
        "test_the_files_beside_a_kept_historys_commits_are_sealed_with_it",
        "test_the_tracked_kept_histories_are_sealed_and_verify"],
    "history --keep into the history of another machine (its machine file another CPU): refused before any work, "
    "naming both": ["test_keeping_into_the_history_of_another_machine_is_refused"],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


# ----------------------------------------------------------------------------- the fuzz journal

SEED_CONV = "seed.conv2d_nhwc_7x7s2"
#: The arguments of a campaign whose every schedule the journal holds: nothing is built or run.
FUZZ = ("fuzz", "--workloads", "seed", "--traces", "1", "--json")


def _judged_campaign(out):
    """A campaign's directory whose journal holds, as the suite writes it, every schedule of FUZZ
    (the six named orders and one trace), each judged REORDERED."""
    from suite import targets
    from suite.core import schedules
    from suite.fuzz import campaign
    from suite.reporting import thresholds

    out.mkdir()
    (out / campaign.OWN_MARK).touch()
    journal = campaign.Journal(out / campaign.JOURNAL)
    judged_by = campaign.judged_by(thresholds.load(None), targets.get("llvm"))
    for kind, name in [("order", order) for order in schedules.ORDERS] + [("trace", "0")]:
        journal.append({"id": f"{SEED_CONV}|float32|llvm|seed0|{kind}:{name}", "seed": 0, "judged_by": judged_by,
                        "workload": SEED_CONV, "dtype": "float32", "target": "llvm", "kind": kind, "name": name,
                        "outcome": "REORDERED", "message": "", "summary": "within the bound", "first_wrong": None,
                        "seconds": 0.5})
    return out / campaign.JOURNAL


def test_a_fuzz_journal_is_read_only_as_it_was_sealed(cli, tmp_path):
    """The journal as the campaign wrote it gives its table (nothing judged again); one line edited
    from REORDERED to CHANGED, or one line damaged, is refused in one line naming the journal and
    the line (exit 2), never a CHANGED finding or a silent pass. A torn last line is cut off."""
    journal = _judged_campaign(tmp_path / "o")
    done = cli(*FUZZ, "--out", tmp_path / "o")
    summary = json.loads(done.stdout)
    assert done.returncode == 0 and summary["judged_this_run"] == 0, done.stderr
    assert summary["table"][f"{SEED_CONV} float32 llvm"]["REORDERED"] == 7 and summary["false_changed"] == 0
    lines = journal.read_text().splitlines()
    edited = lines[:2] + [lines[2].replace('"REORDERED"', '"CHANGED"')] + lines[3:]
    journal.write_text("\n".join(edited) + "\n")
    one_line(cli(*FUZZ, "--out", tmp_path / "o"), f"{journal}, line 3", "seal does not match")
    for damaged in (lines[2][:40], "\x00" * 20, ""):
        journal.write_text("\n".join(lines[:2] + [damaged] + lines[3:]) + "\n")
        one_line(cli(*FUZZ, "--out", tmp_path / "o"), f"{journal}, line 3")
    journal.write_text("\n".join(lines[:3] + lines[4:]) + "\n")  # a line removed: the one after it is refused
    one_line(cli(*FUZZ, "--out", tmp_path / "o"), f"{journal}, line 4")
    journal.write_text("\n".join(lines) + "\n" + lines[0][:30])  # an append cut short
    assert cli(*FUZZ, "--out", tmp_path / "o").returncode == 0
    assert journal.read_text() == "\n".join(lines) + "\n"


def _sealed(lines: list[dict]) -> str:
    """Journal lines sealed by the documented chain (docs/fuzz.md): each line's ``seal`` is the
    sha256 of the seal before it and the line's canonical JSON."""
    seal, text = "", ""
    for line in lines:
        seal = hashlib.sha256((seal + json.dumps(line, sort_keys=True, separators=(",", ":"))).encode()).hexdigest()
        text += json.dumps({**line, "seal": seal}) + "\n"
    return text


def test_a_fuzz_journal_line_of_an_unknown_shape_is_refused(cli, tmp_path):
    """A line sealed as the chain says but of a shape no campaign writes (an outcome that is a
    number or unknown, an id that is a list, a field missing): one line naming it, exit 2, not a
    KeyError or TypeError."""
    journal = _judged_campaign(tmp_path / "o")
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    for line in lines:
        del line["seal"]
    for bad, said in (({"outcome": 5}, "'outcome' is 5"), ({"outcome": "WRONGISH"}, "'outcome' is 'WRONGISH'"),
                      ({"id": ["x"]}, "'id' is ['x']"), ({"kind": None}, "'kind' is None"),
                      ({"seconds": "soon"}, "'seconds' is 'soon'"), ({"colour": "red"}, "'colour'")):
        journal.write_text(_sealed(lines[:4] + [{**lines[4], **bad}] + lines[5:]))
        one_line(cli(*FUZZ, "--out", tmp_path / "o"), f"{journal}, line 5", said)
    journal.write_text(_sealed(lines[:4] + [{k: v for k, v in lines[4].items() if k != "outcome"}] + lines[5:]))
    one_line(cli(*FUZZ, "--out", tmp_path / "o"), f"{journal}, line 5", "no 'outcome'")
    journal.write_text(_sealed(lines))  # the same chain, whole: read
    assert cli(*FUZZ, "--out", tmp_path / "o").returncode == 0


# ----------------------------------------------------------------------------- histories

def _history(run_dir):
    """Two commits, the seed conv2d timed at each, filed as `tvm-suite run` files them; the results."""
    from histories import A, B, SEED, Builder

    history = Builder()
    for commit in (A, B):
        history.accurate(SEED, commit).timing(SEED, commit)
    return history.write(run_dir)


def test_a_dangling_link_among_the_gates_records_is_one_line_naming_it(cli, tmp_path):
    """runs/.gate/ keeps what gates found by timing again: a link there to nothing is named, with
    what to do, not "No such file or directory"."""
    from histories import A, B

    results = _history(tmp_path / "run")
    link = tmp_path / "run" / "runs" / ".gate" / f"{A}-{B}.json"
    link.parent.mkdir()
    link.symlink_to(tmp_path / "gone.json")
    for command in ("gate", "report"):
        extra = ("--commit", B[:8], "--no-remeasure") if command == "gate" else ("--out", tmp_path / "report")
        one_line(cli(command, "--results", results, *extra), str(link), "a link to nothing", "remove it")


# ----------------------------------------------------------------------------- the cache

def _results(done) -> list:
    """What `tvm-suite model --json` measured, less the seconds it took."""
    assert done.returncode == 0, done.stderr
    return [{k: v for k, v in r.items() if k != "seconds_per_input"} for r in json.loads(done.stdout)["results"]]


def test_a_model_input_copied_over_another_is_computed_again(cli, suite_cache):
    """One input's kept entry copied over another's (its files, manifest and all, each verifying):
    its manifest names the entry it was made for, so it is no entry of the other input; computed
    again, the same numbers as before, said in one note."""
    args = ("model", "--model", "miniresnet", "--dtypes", "float32", "--orders", "default", "--inputs", "2", "--json")
    first = cli(*args)
    zero, one = (next((suite_cache / "model-input").glob(f"miniresnet.float32.llvm.default.{i}-*")) for i in (0, 1))
    shutil.rmtree(one)
    shutil.copytree(zero, one)
    again = cli(*args)
    assert _results(again) == _results(first)
    assert [line for line in again.stderr.splitlines() if str(one) in line and "computed again" in line], again.stderr


def test_a_measurement_copied_under_another_key_is_measured_again(tmp_path, monkeypatch):
    """A measurement's entry made under another key (another TVM build: other numbers, its record
    sealed and its parts whole) copied under this combination's key is absent: measured again."""
    from suite import cache
    from suite.core import measurement
    from suite.core.combo import Combo

    monkeypatch.setenv("TVM_SUITE_CACHE", str(tmp_path / "cache"))
    combo = Combo.resolve("resnet50.mean.7x7x2048", "float32", "llvm", "default")
    truth = measurement.measure(combo)
    other = combo.entry.with_name(f"{combo.entry.name[:-16]}{'0' * 16}")  # the entry of another key
    shutil.copytree(combo.entry, other)
    record = cache.read_sealed_json(other / "record.json")
    cache.write_sealed_json(other / "record.json", {**record, "entry": f"measure/{other.name}",
                                                    "metrics": {**record["metrics"], "ulp_mean": 12345.0}})
    shutil.rmtree(combo.entry)
    shutil.copytree(other, combo.entry)
    assert measurement.measure(combo).metrics == truth.metrics


def test_a_verified_entry_copied_under_another_key_is_absent(tmp_path, monkeypatch):
    """suite.cache's verified entries: an entry stored under one key and copied whole under another
    is none of the other's (its manifest names its own), so the value is computed again."""
    from suite import cache

    monkeypatch.setenv("TVM_SUITE_CACHE", str(tmp_path))
    first, second = cache.entry("reference", "r", {"input": 0}), cache.entry("reference", "r", {"input": 1})
    for where, text in ((first, "zero"), (second, "one")):
        cache.store_entry(where, {"value.txt": lambda tmp, text=text: Path(tmp).write_text(text)})
    assert cache.load_entry(second, ("value.txt",))["value.txt"].read_text() == "one"
    shutil.rmtree(second)
    shutil.copytree(first, second)
    assert cache.load_entry(second, ("value.txt",)) is None
    assert cache.load_entry(first, ("value.txt",))["value.txt"].read_text() == "zero"


# ----------------------------------------------------------------------------- a kept history

def _kept(tmp_path):
    """The two-commit history kept from its run with a benchmark list and A's build note:
    (the run's directory, the kept history's)."""
    from histories import A, MACHINE
    from suite.history import keep

    run_dir = tmp_path / "run"
    _history(run_dir)
    (run_dir / "results" / "benchmarks.json").write_text(json.dumps({"version": 2}))
    (run_dir / "install-logs").mkdir()
    (run_dir / "install-logs" / f"{A}.build.json").write_text(json.dumps({"kind": "source", "build_s": 237.9}))
    keep.keep(run_dir, tmp_path / "kept", MACHINE)
    return run_dir, tmp_path / "kept"


def test_the_files_beside_a_kept_historys_commits_are_sealed_with_it(cli, tmp_path):
    """asv's machine file (another CPU written in), its benchmark list and the build notes and logs
    of a kept history, edited, removed or added to since the keep: one line naming the file, exit 2,
    no verdict; a keep over an edit refuses it rather than sealing it again. As kept, READY."""
    from histories import A, B, MACHINE
    from suite.errors import UserError
    from suite.history import keep

    run_dir, kept = _kept(tmp_path)
    gate = ("gate", "--results", kept / "results", "--commit", B[:8], "--no-remeasure")
    assert cli(*gate).returncode == 0
    machine = kept / "results" / MACHINE / "machine.json"
    edits = {machine: lambda facts: facts.replace('"num_cpu": "2"', '"num_cpu": "8"'),
             kept / "results" / "benchmarks.json": lambda text: text.replace("2", "2 "),
             kept / "install-logs" / f"{A}.build.json": lambda text: text.replace("237.9", "23.9")}
    for path, edit in edits.items():
        kept_text = path.read_text()
        path.write_text(edit(kept_text))
        one_line(cli(*gate), path, "edited or damaged since it was kept")
        try:
            keep.keep(run_dir, kept, MACHINE)
            raise AssertionError("an edit was kept")
        except UserError as err:
            assert str(path) in str(err)
        path.write_text(kept_text)
    note = (kept / "install-logs" / f"{A}.build.json").read_text()
    (kept / "install-logs" / f"{A}.build.json").unlink()
    one_line(cli(*gate), kept / "install-logs" / f"{A}.build.json", "missing")
    (kept / "install-logs" / f"{A}.build.json").write_text(note)
    (kept / "install-logs" / f"{B}.log").write_text("a log no run wrote\n")
    one_line(cli(*gate), kept / "install-logs" / f"{B}.log", "not a file the kept history holds")
    (kept / "install-logs" / f"{B}.log").unlink()
    assert cli(*gate).returncode == 0
    machine.write_text("edited again")  # the run's taken instead, as the refusal says: the file and the seal removed
    one_line(cli(*gate), machine, f"remove it and {kept / 'runs' / keep.SEAL}, then keep again")
    machine.unlink()
    (kept / "runs" / keep.SEAL).unlink()
    keep.keep(run_dir, kept, MACHINE)
    assert cli(*gate).returncode == 0


def test_the_tracked_kept_histories_are_sealed_and_verify():
    """reports/tvm-main and reports/tvm-main-hexagon carry the seal of what lies beside their
    commits (written by suite.history.keep.seal over them as they were): every file verifies."""
    from conftest import REPO_ROOT
    from suite.history import keep

    for name in ("tvm-main", "tvm-main-hexagon"):
        history = REPO_ROOT / "reports" / name
        assert (history / "runs" / keep.SEAL).is_file()
        keep.verify(history)


def _another_machine(kept):
    """The kept history's machine file of the same name, of another CPU than any this test runs on."""
    from histories import MACHINE

    path = kept / "results" / MACHINE / "machine.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": MACHINE, "os": "Linux", "arch": "x86_64", "cpu": "Intel Xeon (planted)",
                                "num_cpu": "8192", "ram": "1000", "version": 1}))
    return path


def test_keeping_into_the_history_of_another_machine_is_refused(cli, tmp_path):
    """`history --keep DIR` where DIR's machine file of that name is another CPU: refused before any
    work naming both machines; a keep there leaves it as it was."""
    import pytest

    from histories import MACHINE
    from suite.errors import UserError
    from suite.history import keep

    kept = tmp_path / "kept"
    theirs = _another_machine(kept).read_text()
    done = cli("history", "--tvm-repo", tmp_path / "no-clone", "--releases", "0.26.0", "--machine", MACHINE,
               "--out", tmp_path / "out", "--keep", kept)
    one_line(done, "another machine", "Intel Xeon (planted), 8192 CPUs", f"this machine {MACHINE} is")
    assert not (tmp_path / "out").exists()
    run_dir = tmp_path / "run"
    _history(run_dir)
    with pytest.raises(UserError, match=r"Intel Xeon \(planted\), 8192 CPUs.*this machine testbox is test, 2 CPUs"):
        keep.keep(run_dir, kept, MACHINE)
    assert (kept / "results" / MACHINE / "machine.json").read_text() == theirs
    assert not (kept / "runs").exists()
