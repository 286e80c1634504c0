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
