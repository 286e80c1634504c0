"""Faults of the one file a commit's side data is sealed in (runs/<machine>/<commit>.zip), and of
`history --pack`, which seals an older suite's directories of files into such bundles. Each row a
kind of fault and the tests that show it is handled."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

import pytest

from asv_runs import bundle_entries, loosen, member, tamper, write_entries
from conftest import check_fault_table, one_line
from histories import A, B, MACHINE
from suite import cache
from suite.core import run_bundle, run_place, runstore
from test_faults_history import aa_history, gate, no_traceback

FAULTS = {
    "a bundle that is no zip archive, a link, a directory, or holds a name twice, a directory entry or a member "
    "larger than a run keeps (a zip bomb declares its size): one line naming it, exit 2, nothing judged": [
        "test_a_bundle_that_is_not_what_a_run_seals_is_one_line_naming_it"],
    "hostile bytes a reader's libraries fail on (a member's name starting with a NUL, an LZMA member of bad "
    "options, members of 63 MiB zeros each, a FIFO where the bundle lies, a map declaring 8 TiB or holding text, a "
    "bare .npy as a map, a number of 401 digits sealed as a timing): one line naming it, exit 2, never a traceback "
    "(exit 1 reads as NOT READY), a hang or gigabytes of memory": [
        "test_what_zipfile_and_numpy_fail_on_is_one_line_never_a_traceback"],
    "a member edited, added or removed behind the bundle's seal, or the seal itself missing or naming a path "
    "outside the commit, in today's layout (one tar) and an older suite's (a zip member per file): one line naming "
    "the member": ["test_a_member_changed_behind_the_seal_is_named"],
    "a bundle's tar holding what a seal never writes (a link, a hard link, a directory, a device, a FIFO, an "
    "absolute or `..` name, a name twice, a PAX header that renames a file, of another record or global, a member "
    "over 64 MiB, members over the bundle's limits of bytes or count, a truncated tar, one with half its end, a tar "
    "bomb declaring 512 MiB): one line naming it, exit 2, nothing written to disk": [
        "test_a_tar_that_is_not_what_a_seal_writes_is_one_line_naming_it"],
    "a file beside a sealed bundle that is not in it (written after the seal) is refused; the copies an "
    "interrupted seal leaves of its own members are not": [
        "test_a_file_beside_the_bundle_is_refused_unless_it_is_a_copy_of_a_member"],
    "the same side data sealed twice gives the same bytes (members sorted, no dates): a keep that finds the "
    "commit kept already leaves it; asv measuring more of a sealed commit seals old and new together": [
        "test_sealing_is_deterministic_and_adds_to_what_was_sealed"],
    "`history --pack` of an older suite's history: every commit verified before it is packed (a damaged file "
    "refused, naming it, that commit left as it was), the same verdict after, a second pack a no-op; a "
    "directory that is no history, or a kept history whose seal is broken, refused before any work; what an "
    "interrupted pack left beside a bundle (copies of its members) removed by the next; an older suite's bundle "
    "(a zip member per file) sealed again as one tar, verified first (a damaged one left as it was and said, exit "
    "2), a file of another name left alone; --pack with --keep "
    "refused; a file the old seal did not cover (a dotfile) refused, never removed; a second pack while one is "
    "under way refused in one line; a link where a commit's directory lies "
    "left as it was and said": [
        "test_pack_turns_an_older_history_into_bundles_with_the_same_verdict",
        "test_pack_refuses_damage_and_what_is_no_history"],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


@pytest.fixture
def run_dir(tmp_path) -> Path:
    aa_history().write(tmp_path / "asv")
    return tmp_path / "asv"


def _rewrite(bundle: Path, entries) -> None:
    """Write ``bundle`` anew from (ZipInfo or name, bytes) pairs, as a hostile hand would."""
    bundle.unlink()
    with zipfile.ZipFile(bundle, "w") as archive:
        for info, data in entries:
            archive.writestr(info, data)


def _older(place: run_place.Place) -> None:
    """The commit's side data as an older suite sealed it: its files in its directory, beside them
    their manifest (sealed)."""
    members = run_bundle.sealed_members(place)
    loosen(place)
    cache.write_sealed_json(place.dir / run_place.MANIFEST, {n: cache.bytes_digest(d) for n, d in members.items()})


@pytest.mark.filterwarnings("ignore:Duplicate name")  # the hostile bundle holds one
def test_a_bundle_that_is_not_what_a_run_seals_is_one_line_naming_it(cli, run_dir):
    place = run_place.Place(run_dir, MACHINE, B)
    sealed = place.bundle.read_bytes()
    members = [(info, zipfile.ZipFile(place.bundle).read(info)) for info in zipfile.ZipFile(place.bundle).infolist()]
    name, data = members[-1][0].filename, members[-1][1]
    big = zipfile.ZipInfo("timings/x.y.float32.llvm.default.json")
    cases = {
        "not a zip": (lambda: place.bundle.write_bytes(b"PK\x03\x04 not an archive"), "damaged"),
        "truncated": (lambda: place.bundle.write_bytes(sealed[: len(sealed) // 2]), "damaged"),
        "a name twice": (lambda: _rewrite(place.bundle, [*members, (name, data)]), "members, not the bundle"),
        "a directory entry": (lambda: _rewrite(place.bundle, [*members, ("timings/", b"")]), "not a file a run keeps"),
        "a member of 65 MiB": (lambda: _rewrite(place.bundle, [*members, (big, b"0" * (65 << 20))]),
                               "not a file a run keeps (at most 64 MiB)"),
    }
    for case, (make, words) in cases.items():
        make()
        line = one_line(gate(cli, run_dir / "results", "--commit", B[:8]), place.bundle, words)
        assert "Traceback" not in line, case
        place.bundle.unlink()
        place.bundle.write_bytes(sealed)
    elsewhere = run_dir.parent / "elsewhere.zip"
    os.replace(place.bundle, elsewhere)
    place.bundle.symlink_to(elsewhere)
    one_line(gate(cli, run_dir / "results", "--commit", B[:8]), place.bundle, "a link")
    place.bundle.unlink()
    place.bundle.mkdir()
    one_line(gate(cli, run_dir / "results", "--commit", B[:8]), place.bundle, "a directory where")
    place.bundle.rmdir()
    os.replace(elsewhere, place.bundle)
    no_traceback(gate(cli, run_dir / "results", "--commit", B[:8]), 0)


def test_a_member_changed_behind_the_seal_is_named(cli, run_dir):
    place = run_place.Place(run_dir, MACHINE, B)
    timing = next(n for n in run_bundle.sealed_members(place) if n.startswith("timings/"))
    value = json.loads(member(place, timing))
    for tarred in (True, False):
        entries = bundle_entries(place.bundle)
        write_entries(place.bundle, entries, tarred)
        sealed = place.bundle.read_bytes()

        def refused(*words):
            one_line(gate(cli, run_dir / "results", "--commit", B[:8]), *words)
            place.bundle.write_bytes(sealed)

        tamper(place, timing, json.dumps({**value, "samples_s": [s / 2 for s in value["samples_s"]]}).encode())
        refused(place.bundle / timing, f"damaged (not the file the run of {B[:12]} kept)")
        tamper(place, "timings/extra.float32.llvm.default.json", member(place, timing))
        refused(place.bundle / "timings/extra.float32.llvm.default.json", "not in its manifest")
        write_entries(place.bundle, {n: d for n, d in entries.items() if n != timing})
        refused(place.bundle / timing, "missing")
        write_entries(place.bundle, {n: d for n, d in entries.items() if n != run_place.MANIFEST}, tarred)
        refused(place.bundle / run_place.MANIFEST, "damaged or missing")
        outside = {"../../escape.json": cache.bytes_digest(b"{}")}
        tamper(place, run_place.MANIFEST, cache.sealed_text(outside).encode())
        refused(place.bundle / run_place.MANIFEST, "outside the commit's side data")
    no_traceback(gate(cli, run_dir / "results", "--commit", B[:8]), 0)  # an older suite's layout reads as today's


def _tar(entries, end: bool = True) -> bytes:
    """A tar of (TarInfo, bytes or None: its header alone) as a hostile hand would write it, with
    or without its end."""
    import io
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for info, data in entries:
            if data is None:
                out.write(info.tobuf(tarfile.PAX_FORMAT))
            else:
                tar.addfile(info, io.BytesIO(data) if info.isreg() else None)
        if not end:
            return out.getvalue()
    return out.getvalue()


def test_a_tar_that_is_not_what_a_seal_writes_is_one_line_naming_it(cli, run_dir, monkeypatch):
    import io
    import tarfile

    place = run_place.Place(run_dir, MACHINE, B)
    sealed, files = place.bundle.read_bytes(), sorted(p for p in run_dir.rglob("*"))
    entries = bundle_entries(place.bundle)
    manifest = entries.pop(run_place.MANIFEST)
    timing = next(n for n in entries if n.startswith("timings/"))
    where = place.bundle / run_bundle.TAR

    def info(name, kind=tarfile.REGTYPE, size=None, **fields):
        made = tarfile.TarInfo(name)
        made.type, made.size = kind, len(entries[timing]) if size is None else size
        for key, value in fields.items():
            setattr(made, key, value)
        return made

    def files_and(*extra, without=()):
        return [*((info(n, size=len(d)), d) for n, d in entries.items() if n not in without), *extra]

    def bundle_of(tar: bytes) -> None:
        with zipfile.ZipFile(place.bundle, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr(run_place.MANIFEST, manifest)
            archive.writestr(run_bundle.TAR, tar)

    def bomb() -> None:  # members.tar declaring 512 MiB: refused before a byte of it is inflated
        bundle_of(run_bundle.tar_of(entries))
        data = bytearray(place.bundle.read_bytes())
        for at in (data.rfind(b"PK\x03\x04") + 22, data.rfind(b"PK\x01\x02") + 24):
            data[at:at + 4] = (512 << 20).to_bytes(4, "little")
        place.bundle.write_bytes(bytes(data))

    def global_header() -> bytes:
        out = io.BytesIO()
        with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT, pax_headers={"path": "x"}) as tar:
            for made, data in files_and():
                tar.addfile(made, io.BytesIO(data))
        return out.getvalue()

    legit = run_bundle.tar_of(entries)
    link = {"linkname": "/etc/passwd", "size": 0}
    cases = {
        "a link": (_tar(files_and((info(timing, tarfile.SYMTYPE, **link), b""), without={timing})),
                   place.bundle / timing, "a link, not a file"),
        "a hard link": (_tar(files_and((info(timing, tarfile.LNKTYPE, **link), b""), without={timing})),
                        place.bundle / timing, "a hard link"),
        "a directory": (_tar(files_and((info("timings", tarfile.DIRTYPE, size=0), b""))),
                        place.bundle / "timings", "a directory entry"),
        "a device": (_tar(files_and((info("dev", tarfile.CHRTYPE, size=0), b""))), place.bundle / "dev", "a device"),
        "a FIFO": (_tar(files_and((info("fifo", tarfile.FIFOTYPE, size=0), b""))), place.bundle / "fifo", "a FIFO"),
        "an absolute name": (_tar(files_and((info("/etc/x"), entries[timing]))), where, "outside the commit"),
        "a .. name": (_tar(files_and((info("../../x"), entries[timing]))), where, "outside the commit"),
        "a name twice": (_tar(files_and((info(timing), entries[timing]))), place.bundle / timing, "twice"),
        "a PAX renaming": (_tar([*files_and(without={timing}), (info(timing, pax_headers={
            "path": "timings/else.json"}), entries[timing])]), timing, "a PAX header that renames it"),
        "a PAX of another record": (_tar([*files_and(without={timing}), (info(timing, pax_headers={
            "linkpath": "x"}), entries[timing])]), where, "a PAX header of linkpath"),
        "a PAX global header": (global_header(), place.bundle, "a PAX global header"),
        "a member of 65 MiB": (_tar([*files_and(), (info("timings/big.json", size=65 << 20), None)]),
                               place.bundle / "timings/big.json", "at most 64 MiB"),
        "truncated": (legit[: len(legit) // 2], where, "truncated"),
        "half its end": (_tar(files_and(), end=False) + bytes(512), where, "truncated"),
        "a bomb": (None, place.bundle, "more than 256 MiB"),
    }
    for tar, named, words in cases.values():
        bomb() if tar is None else bundle_of(tar)
        one_line(gate(cli, run_dir / "results", "--commit", B[:8]), named, words)
    with monkeypatch.context() as limits:  # the limits of bytes and of members in all, as small as a test's bundle
        limits.setattr(run_bundle, "MAX_BUNDLE_BYTES", sum(map(len, entries.values())) - 1)
        bundle_of(legit)
        one_line(gate(cli, run_dir / "results", "--commit", B[:8]), where, "more than")
        limits.undo()
        limits.setattr(run_bundle, "MAX_MEMBERS", len(entries) - 1)
        one_line(gate(cli, run_dir / "results", "--commit", B[:8]), where, f"over {len(entries) - 1} members")
    assert sorted(p for p in run_dir.rglob("*")) == files  # nothing extracted
    place.bundle.write_bytes(sealed)
    no_traceback(gate(cli, run_dir / "results", "--commit", B[:8]), 0)


def test_a_file_beside_the_bundle_is_refused_unless_it_is_a_copy_of_a_member(cli, run_dir):
    place = run_place.Place(run_dir, MACHINE, B)
    timing = next(n for n in run_bundle.sealed_members(place) if n.startswith("timings/"))
    copy = place.file(timing)
    copy.parent.mkdir(parents=True)
    copy.write_bytes(member(place, timing))  # an interrupted seal: the bundle written, its directory not removed
    no_traceback(gate(cli, run_dir / "results", "--commit", B[:8]), 0)
    copy.write_bytes(member(place, timing).replace(b"[", b"[1e-9, ", 1))
    one_line(gate(cli, run_dir / "results", "--commit", B[:8]), copy, "beside its sealed", place.bundle.name)


def test_sealing_is_deterministic_and_adds_to_what_was_sealed(run_dir, tmp_path):
    from suite.history import keep

    place = run_place.Place(run_dir, MACHINE, B)
    sealed = place.bundle.read_bytes()
    loosen(place)
    os.utime(next(place.dir.rglob("*.json")), (0, 0))  # another date: no part of the bundle
    run_bundle.seal(place)
    assert place.bundle.read_bytes() == sealed and not place.dir.exists()
    kept = keep.keep(run_dir, tmp_path / "kept", MACHINE)
    assert kept.copied == (A, B)
    again = keep.keep(run_dir, tmp_path / "kept", MACHINE)
    assert again.copied == () and again.already == (A, B)
    # asv measures one more combination of the sealed commit (--skip-existing): sealed with the others
    more = run_place.relative("records", ("w.x", "float32", "llvm", "tuned"))
    place.file(more).parent.mkdir(parents=True)
    place.file(more).write_text("llvm")
    with pytest.raises(run_place.DamagedRunData, match="beside its sealed"):  # before its seal: refused, named
        runstore.load(place)
    run_bundle.seal(place)
    members = run_bundle.sealed_members(place)
    assert members[more] == b"llvm" and set(members) - {more} == set(run_bundle.sealed_members(
        run_place.Place(tmp_path / "kept", MACHINE, B)))


def test_pack_turns_an_older_history_into_bundles_with_the_same_verdict(cli, run_dir):
    before = gate(cli, run_dir / "results", "--commit", B[:8])
    no_traceback(before, 0)
    loaded = {c: runstore.load(run_place.Place(run_dir, MACHINE, c)) for c in (A, B)}
    for commit in (A, B):
        _older(run_place.Place(run_dir, MACHINE, commit))
    older = gate(cli, run_dir / "results", "--commit", B[:8])  # an older layout still loads
    assert older.stdout.replace(".zip", "") == before.stdout.replace(".zip", "")
    packed = cli("history", "--pack", str(run_dir))
    no_traceback(packed, 0)
    assert packed.stdout.startswith(f"packed {run_dir}: 2 commits sealed into one file each;"), packed.stdout
    assert sorted(p.name for p in (run_dir / "runs" / MACHINE).iterdir()) == [f"{A}.zip", f"{B}.zip"]
    for commit in (A, B):
        after = runstore.load(run_place.Place(run_dir, MACHINE, commit))
        assert (after.values, after.timings, after.code) == (loaded[commit].values, loaded[commit].timings,
                                                             loaded[commit].code)
    assert gate(cli, run_dir / "results", "--commit", B[:8]).stdout == before.stdout
    again = cli("history", "--pack", str(run_dir))
    no_traceback(again, 0)
    assert again.stdout.startswith(f"packed {run_dir}: 0 commits sealed into one file each; 0 bundles"), again.stdout
    # bundles of an older suite (a zip member per file): sealed again as one tar each, a damaged one left
    for commit in (A, B):
        bundle = run_place.Place(run_dir, MACHINE, commit).bundle
        write_entries(bundle, bundle_entries(bundle), tarred=False)
    damaged = run_place.Place(run_dir, MACHINE, B)
    timing = next(n for n in run_bundle.sealed_members(damaged) if n.startswith("timings/"))
    original = member(damaged, timing)
    tamper(damaged, timing, b"{}")
    left, mine = damaged.bundle.read_bytes(), damaged.bundle.parent / "notes.txt"
    mine.write_text("mine")
    said = cli("history", "--pack", str(run_dir))
    assert said.returncode == 2 and "Traceback" not in said.stderr, said
    assert "0 commits sealed into one file each; 1 bundles" in said.stdout, said.stdout
    assert f"left as it was (damaged): {damaged.bundle / timing}: damaged" in said.stdout, said.stdout
    assert damaged.bundle.read_bytes() == left and mine.read_text() == "mine"
    assert run_bundle.tarred(run_place.Place(run_dir, MACHINE, A).bundle)
    tamper(damaged, timing, original)  # mended: as it was sealed
    for commit in (A, B):  # the older layout and today's: the same data
        after = runstore.load(run_place.Place(run_dir, MACHINE, commit))
        assert (after.values, after.timings, after.code) == (loaded[commit].values, loaded[commit].timings,
                                                             loaded[commit].code)
    mine.unlink()
    # interrupted while it removed a packed commit's directory: the copies left are removed by the next
    place = run_place.Place(run_dir, MACHINE, B)
    timing = next(n for n in run_bundle.sealed_members(place) if n.startswith("timings/"))
    place.file(timing).parent.mkdir(parents=True)
    place.file(timing).write_bytes(member(place, timing))
    finished = cli("history", "--pack", str(run_dir))
    no_traceback(finished, 0)
    assert "left as they were" not in finished.stdout and not place.dir.exists(), finished.stdout
    # a commit's directory that is a link elsewhere: not packed (nor removed), and said
    elsewhere = run_dir.parent / "elsewhere"
    members = run_bundle.sealed_members(place)
    for name, data in members.items():
        (elsewhere / name).parent.mkdir(parents=True, exist_ok=True)
        (elsewhere / name).write_bytes(data)
    cache.write_sealed_json(elsewhere / run_place.MANIFEST, {n: cache.bytes_digest(d) for n, d in members.items()})
    place.bundle.unlink()
    place.dir.symlink_to(elsewhere)
    linked = cli("history", "--pack", str(run_dir))
    no_traceback(linked, 0)
    assert "a link where a commit's directory lies" in linked.stdout and B[:12] in linked.stdout, linked.stdout
    assert place.dir.is_symlink() and (elsewhere / run_place.MANIFEST).exists()


def test_pack_refuses_damage_and_what_is_no_history(cli, run_dir, tmp_path):
    for commit in (A, B):
        _older(run_place.Place(run_dir, MACHINE, commit))
    place = run_place.Place(run_dir, MACHINE, B)
    notes = place.dir / "timings" / ".notes"  # a file of the user's, which the seal of old never covered
    notes.write_text("mine")
    one_line(cli("history", "--pack", str(run_dir)), notes, "not a file the run", "move it elsewhere")
    assert notes.read_text() == "mine" and not place.bundle.exists()
    notes.unlink()
    timing = next(place.dir.glob("timings/*.json"))
    timing.write_bytes(timing.read_bytes() + b" ")
    one_line(cli("history", "--pack", str(run_dir)), timing, "damaged")
    assert place.dir.is_dir() and not place.bundle.exists()  # left as it was, for its owner to look at
    one_line(cli("history", "--pack", str(tmp_path / "nothing")), tmp_path / "nothing", "no runs/ there")
    from suite.history import keep

    one_line(cli("history", "--pack", str(run_dir), "--keep", str(tmp_path / "kept")), "takes no --keep")
    # --tvm-repo, optional for --pack alone, is still required to measure
    one_line(cli("history", "--releases", "0.26.0", "--out", str(tmp_path / "h")), "--tvm-repo is required")
    assert not (tmp_path / "h").exists()
    import fcntl

    held = os.open(run_dir / "runs", os.O_RDONLY | os.O_DIRECTORY)
    try:  # another pack holds the history
        fcntl.flock(held, fcntl.LOCK_EX)
        one_line(cli("history", "--pack", str(run_dir)), "another pack of it is under way")
    finally:
        os.close(held)
    assert not (tmp_path / "kept").exists()
    (run_dir / keep.MARK).write_text("{}")  # a kept history without its seal
    one_line(cli("history", "--pack", str(run_dir)), keep.SEAL, "missing")


def _reseal(place: run_place.Place, name: str, data: bytes) -> None:
    """Replace or add one member and seal the bundle again, as a forger would."""
    members = run_bundle.sealed_members(place)
    members[name] = data
    run_bundle.write_bundle(place.bundle, members)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_what_zipfile_and_numpy_fail_on_is_one_line_never_a_traceback(cli, run_dir):
    import io

    import numpy as np

    place = run_place.Place(run_dir, MACHINE, B)
    sealed = place.bundle.read_bytes()
    timing = next(n for n in run_bundle.sealed_members(place) if n.startswith("timings/"))
    value = json.loads(member(place, timing))
    maps = "maps/" + ".".join(("seed.conv2d_nhwc_7x7s2", "float16", "llvm", "tuned")) + ".npz"

    def npz(**arrays) -> bytes:
        out = io.BytesIO()
        np.savez(out, **arrays)
        return out.getvalue()

    def huge_map() -> bytes:  # a header declaring 2**40 floats, and no data
        header = io.BytesIO()
        np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (2**40,)})
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as archive:
            archive.writestr("channels.npy", header.getvalue())
        return out.getvalue()

    def lzma_member():
        with zipfile.ZipFile(place.bundle, "a") as archive:
            archive.writestr("x", b"\x09\x14\x05\x00" + b"\xff" * 32)
        data = bytearray(place.bundle.read_bytes())
        for at in (data.rfind(b"PK\x03\x04") + 8, data.rfind(b"PK\x01\x02") + 10):
            data[at:at + 2] = (14).to_bytes(2, "little")  # the method: LZMA
        place.bundle.write_bytes(bytes(data))

    cases = {
        "a name starting with a NUL": (lambda: place.bundle.write_bytes(sealed.replace(
            run_bundle.TAR.encode(), b"\0" + run_bundle.TAR.encode()[1:])),
                                       "damaged"),
        "an LZMA member of bad options": (lzma_member, "damaged"),
        "30 members of 63 MiB of zeros": (lambda: _rewrite(place.bundle, [
            (zipfile.ZipInfo(f"z{n}"), b"\0" * (63 << 20)) for n in range(5)]), "more than 256 MiB"),
        "a map declaring 8 TiB": (lambda: _reseal(place, maps, huge_map()), "not difference maps"),
        "a map of text": (lambda: _reseal(place, maps, npz(channels=np.array(["a", "b"]))), "not difference maps"),
        "a bare .npy as a map": (lambda: _reseal(place, maps, (lambda o: (np.save(o, np.ones(3)), o.getvalue())[1])(
            io.BytesIO())), "not difference maps"),
        "401 digits as a sample": (lambda: _reseal(place, timing, (
            '{"samples_s": [1' + "0" * 400 + '], "kernel": "%s", "tvm": "%s"}' % (value["kernel"], value["tvm"])
        ).encode()), "not timing samples"),
    }
    for case, (make, words) in cases.items():
        make()
        done = gate(cli, run_dir / "results", "--commit", B[:8])
        assert "Traceback" not in done.stderr, (case, done.stderr[-2000:])
        assert done.returncode == 2, (case, done.stdout[-300:])
        one_line(done, place.bundle, words)
        place.bundle.unlink()
        place.bundle.write_bytes(sealed)
    place.bundle.unlink()
    os.mkfifo(place.bundle)  # opened to read, a FIFO waits for a writer for ever
    one_line(gate(cli, run_dir / "results", "--commit", B[:8]), place.bundle, "not a regular file")
    place.bundle.unlink()
    place.bundle.write_bytes(sealed)
    no_traceback(gate(cli, run_dir / "results", "--commit", B[:8]), 0)
