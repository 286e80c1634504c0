"""Faults of data the suite keeps and reads back: each kind is sealed, or refused, never trusted
as found. Each row a kind of fault and the tests that show it is handled."""

import hashlib
import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from conftest import check_fault_table, one_line

FAULTS = {
    "a fuzz journal line edited (REORDERED to CHANGED), damaged or of a shape no campaign writes: one line "
    "naming the journal and the line, exit 2; the table comes from verified lines only": [
        "test_a_fuzz_journal_is_read_only_as_it_was_sealed", "test_a_fuzz_journal_line_of_an_unknown_shape_is_refused"],
    "a fuzz campaign's journal, summary or findings a link to a file of the user's, or a second name of one (hard "
    "link): one line naming it before any work, the user's file byte for byte as it was (the journal was cut and "
    "appended to through the link)": ["test_a_fuzz_campaigns_files_are_never_read_or_written_through_a_link"],
    "a FIFO as a fuzz campaign's journal or summary: one line naming it, never a hang": [
        "test_a_fifo_in_place_of_a_fuzz_journal_is_refused_not_waited_on"],
    "a fuzz journal line forged and sealed again (the seal is a checksum, no signature): a finding's directory "
    "outside OUT/findings (/etc) refused in one line; its key, label and place printed with control characters "
    "escaped": ["test_a_forged_journal_line_cannot_name_a_place_outside_the_campaign_nor_act_on_the_terminal"],
    "a kept history's seal (runs/.kept.json) removed or damaged: one line naming it and how to restore it, exit 2, "
    "never read as a run's own directory with nothing to verify; a keep refuses it too; a run's own directory (no "
    "seal, no mark) still loads": ["test_a_kept_history_whose_seal_is_removed_is_refused_not_read_as_a_run"],
    "a dangling link among the gate's kept re-timings (runs/.gate/): one line naming it and what to do": [
        "test_a_dangling_link_among_the_gates_records_is_one_line_naming_it"],
    "a cache entry copied under another key (another input, another TVM build): absent, computed again, never "
    "reused": [
        "test_a_model_input_copied_over_another_is_computed_again",
        "test_a_measurement_copied_under_another_key_is_measured_again",
        "test_a_verified_entry_copied_under_another_key_is_absent"],
    "asv's machine file, its benchmark list or a build note or log edited, removed or added in a kept history: "
    "one line naming the file, exit 2, never telling to remove the seal; a keep never seals the edit again, and "
    "takes the run's file only where the kept one was removed on purpose": [
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
    from suite.fuzz import combinations, directory
    from suite.fuzz.journal import Journal
    from suite.reporting import thresholds

    out.mkdir()
    (out / directory.OWN_MARK).touch()
    journal = Journal(out / directory.JOURNAL)
    judged_by = combinations.judged_by(thresholds.load(None), targets.get("llvm"))
    for kind, name in [("order", order) for order in schedules.ORDERS] + [("trace", "0")]:
        journal.append({"id": f"{SEED_CONV}|float32|llvm|seed0|{kind}:{name}", "seed": 0, "judged_by": judged_by,
                        "workload": SEED_CONV, "dtype": "float32", "target": "llvm", "kind": kind, "name": name,
                        "outcome": "REORDERED", "message": "", "summary": "within the bound", "first_wrong": None,
                        "seconds": 0.5})
    return out / directory.JOURNAL


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


def test_a_fuzz_campaigns_files_are_never_read_or_written_through_a_link(cli, tmp_path):
    """OUT/journal.jsonl a link to a file of the user's that ends without a newline (as a torn
    journal does), or a second name of that file (a hard link); summary.json a link; a link under
    findings/: each is refused in one line naming it, before any work, and the user's file is byte
    for byte as it was (the suite cut its "torn" last line and appended to it through the link).
    The campaign's own journal with a torn last line is cut, as before."""
    from suite.fuzz import directory

    journal = _judged_campaign(tmp_path / "o")
    out, whole = journal.parent, journal.read_bytes()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(whole + b"precious user data, one line, no newline")
    precious = victim.read_bytes()
    journal.unlink()
    journal.symlink_to(victim)
    one_line(cli(*FUZZ, "--out", out), journal, "a link", "move it away")
    assert victim.read_bytes() == precious
    journal.unlink()
    os.link(victim, journal)
    one_line(cli(*FUZZ, "--out", out), journal, "hard link")
    assert victim.read_bytes() == precious
    journal.unlink()
    journal.write_bytes(precious)  # the campaign's own, its last line torn
    for name in (directory.SUMMARY, directory.OWN_MARK):
        (out / name).unlink(missing_ok=True)
        (out / name).symlink_to(victim)
        one_line(cli(*FUZZ, "--out", out), out / name, "a link")
        (out / name).unlink()
        assert victim.read_bytes() == precious
    (out / directory.OWN_MARK).touch()
    (out / directory.FINDINGS_DIR).mkdir()
    (out / directory.FINDINGS_DIR / "x").symlink_to(tmp_path)  # a finding's directory a link to the user's
    one_line(cli(*FUZZ, "--out", out), out / directory.FINDINGS_DIR / "x", "a link")
    (out / directory.FINDINGS_DIR / "x").unlink()
    done = cli(*FUZZ, "--out", out)
    assert done.returncode == 0, done.stderr
    assert journal.read_bytes() == whole and victim.read_bytes() == precious
    assert not (out / directory.SUMMARY).is_symlink() and json.loads((out / directory.SUMMARY).read_text())


def test_a_fifo_in_place_of_a_fuzz_journal_is_refused_not_waited_on(cli, tmp_path):
    """A FIFO as OUT/journal.jsonl (or summary.json): one line naming it, at once; the journal is
    never opened in a way that waits for a writer."""
    from suite.errors import UserError
    from suite.fuzz import directory
    from suite.fuzz.journal import Journal

    out = tmp_path / "o"
    out.mkdir()
    (out / directory.OWN_MARK).touch()
    fifo = out / directory.JOURNAL
    os.mkfifo(fifo)
    said = []

    def load():
        try:
            Journal(fifo).load()
        except UserError as err:
            said.append(str(err))

    reader = threading.Thread(target=load, daemon=True)
    reader.start()
    reader.join(20)
    if reader.is_alive():
        with open(fifo, "wb"):  # a writer comes and goes: the waiting read ends
            pass
        reader.join(5)
        raise AssertionError("the journal's load waits on a FIFO")
    assert said and "a FIFO" in said[0], said
    one_line(cli(*FUZZ, "--out", out), fifo, "a FIFO", "move it away")
    fifo.unlink()
    os.mkfifo(out / directory.SUMMARY)
    one_line(cli(*FUZZ, "--out", out), out / directory.SUMMARY, "a FIFO")


def test_a_forged_journal_line_cannot_name_a_place_outside_the_campaign_nor_act_on_the_terminal(cli, tmp_path):
    """The seal is a checksum anyone can recompute (docs/fuzz.md says so): a line forged and sealed
    again is believed. What it can make the campaign show is held all the same: a finding whose
    directory is not the campaign's own under OUT/findings (/etc, a relative way out, another
    directory's findings) is refused in one line naming the line; one in place is shown there, and
    its key and a combination's label reach the terminal with their control characters escaped."""
    from suite.fuzz import directory

    journal = _judged_campaign(tmp_path / "o")
    out = journal.parent
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    for line in lines:
        del line["seal"]
    key = "FORGED\x1b[31m-key\u202e"
    forged = {**lines[-1], "outcome": "CHANGED", "summary": "forged", "finding": {"dir": "/etc", "key": key}}
    own = f"{directory.FINDINGS_DIR}/{directory.safe_name(forged['id'])}"
    for elsewhere in ("/etc", f"../../{own}", str(tmp_path / "other" / own), f"{own}/..", "findings/x"):
        journal.write_text(_sealed(lines[:-1] + [{**forged, "finding": {"dir": elsewhere, "key": key}}]))
        one_line(cli(*FUZZ, "--out", out), f"{journal}, line {len(lines)}", "is not the campaign's own", own)
    label = {**lines[0], "id": "x|float32|llvm|seed0|order:default", "workload": "seed\x1b[2J\r"}
    journal.write_text(_sealed(lines[:-1] + [{**forged, "finding": {"dir": own, "key": key}}, label]))
    done = cli(*FUZZ, "--out", out)
    assert done.returncode == 12, done.stderr  # believed: CHANGED
    assert "\x1b" not in done.stderr + done.stdout and "\u202e" not in done.stderr and "\r" not in done.stderr
    assert "FORGED\\x1b[31m-key\\u202e" in done.stderr and "seed\\x1b[2J\\x0d float32 llvm" in done.stderr
    assert json.loads(done.stdout)["findings"][0]["first"] == str(out / own)


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


def test_a_model_input_copied_over_another_is_computed_again(cli, tmp_path):
    """One input's kept entry copied over another's (its files, manifest and all, each verifying):
    its manifest names the entry it was made for, so it is no entry of the other input; computed
    again, the same numbers as before, said in one note. A cache of its own: in the session's,
    other tests leave entries of other keys under the same names."""
    env = {"TVM_SUITE_CACHE": str(tmp_path / "cache")}
    args = ("model", "--model", "miniresnet", "--dtypes", "float32", "--orders", "default", "--inputs", "2", "--json")
    first = cli(*args, env=env)
    zero, one = (next((tmp_path / "cache" / "model-input").glob(f"miniresnet.float32.llvm.default.{i}-*"))
                 for i in (0, 1))
    shutil.rmtree(one)
    shutil.copytree(zero, one)
    again = cli(*args, env=env)
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
    machine.write_text("edited again")  # the run's taken instead, as the refusal says: that file removed, kept again
    said = one_line(cli(*gate), machine, "git checkout", "remove it (only it) and keep again", "--keep")
    assert keep.SEAL not in said.split("): ", 1)[1], said  # never told to remove the seal
    machine.unlink()
    one_line(cli(*gate), machine, "missing", "keep again from the run")
    keep.keep(run_dir, kept, MACHINE)
    assert machine.read_bytes() == (run_dir / "results" / MACHINE / "machine.json").read_bytes()
    assert cli(*gate).returncode == 0
    note = kept / "install-logs" / f"{A}.build.json"  # removed, and the run has none to take: refused
    (run_dir / "install-logs" / note.name).unlink()
    note.unlink()
    with pytest.raises(UserError, match=f"{note}: missing .*has no install-logs/{note.name}.*git checkout"):
        keep.keep(run_dir, kept, MACHINE)


def test_a_kept_history_whose_seal_is_removed_is_refused_not_read_as_a_run(cli, tmp_path):
    """Removing runs/.kept.json does not turn the checks of a kept history off: a keep leaves its
    mark (.tvm-suite-kept), and reports/tvm-main's kind hold asv's configuration of their pages
    (asv.conf.json); without the seal (or with a damaged one), one line naming it and how to
    restore it, exit 2, never to remove it; a keep refuses too. A run's own directory (no seal, no
    mark) loads as before."""
    from histories import B, MACHINE
    from suite.errors import UserError
    from suite.history import keep

    run_dir, kept = _kept(tmp_path)
    gate = ("gate", "--commit", B[:8], "--no-remeasure", "--results")
    seal = kept / "runs" / keep.SEAL
    sealed = seal.read_bytes()
    machine = kept / "results" / MACHINE / "machine.json"
    as_kept = machine.read_text()
    seal.unlink()
    machine.write_text(as_kept.replace('"num_cpu": "2"', '"num_cpu": "64"'))
    said = one_line(cli(*gate, kept / "results"), seal, "missing", "is a kept history", ".tvm-suite-kept",
                    "git checkout")
    assert "remove" not in said, said
    machine.write_text(as_kept)
    with pytest.raises(UserError, match="missing, and .* is a kept history"):  # never sealed again as it is now
        keep.keep(run_dir, kept, MACHINE)
    machine.write_text(as_kept.replace('"num_cpu": "2"', '"num_cpu": "64"'))
    seal.write_text("{}")
    said = one_line(cli(*gate, kept / "results"), seal, "damaged", "git checkout")
    assert "remove" not in said, said
    seal.write_bytes(sealed)
    one_line(cli(*gate, kept / "results"), machine, "edited or damaged since it was kept")
    (kept / keep.MARK).unlink()  # reports/tvm-main's kind: asv's configuration of its pages says it
    shutil.copy(Path(__file__).parent.parent / "reports" / "tvm-main" / "asv.conf.json", kept / "asv.conf.json")
    seal.unlink()
    one_line(cli(*gate, kept / "results"), seal, "missing", "is a kept history", "asv.conf.json")
    assert cli(*gate, run_dir / "results").returncode == 0  # a run's own directory: no seal, nothing beside to verify


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
