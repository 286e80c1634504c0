"""What gates found by timing suspects again, kept beside a run's side data: one sealed record per
pair of commits, ``runs/.gate/<baseline>-<candidate>.json`` (:func:`keep_remeasured`), read back by
every later gate and report of the pair (:func:`load_remeasured`), so that a verdict given on a
re-timing is given again on it; and what a re-timing answers where it cannot time
(:class:`KeptSamples`)."""

from __future__ import annotations

import os
from pathlib import Path

from suite import cache
from suite.core.run_place import GATE, MAX_FILE_BYTES, RUNS, DamagedRunData, check_commit


class KeptSamples(str):
    """What a ``remeasure`` answers where a suspect's kernel is gone from the cache and cannot be
    rebuilt here (a history copied to another machine, which has not the TVM that built it): why, in
    words. The suspect is then judged on its kept samples: slower by the latency rule there, it is
    confirmed on them (FAIL), its line says so, and nothing is kept as a re-measurement (a machine
    that has the kernels times them again), rather than leaving the verdict to a machine that may
    never have them."""

def _remeasured_path(run_dir: Path, baseline: str, candidate: str) -> Path:
    return Path(run_dir) / RUNS / GATE / f"{check_commit(baseline)}-{check_commit(candidate)}.json"


def keep_remeasured(run_dir: Path, baseline: str, candidate: str, entries: list[dict]) -> Path | None:
    """Keep what a gate found by timing suspects of ``candidate`` against ``baseline`` again,
    merged into what earlier gates kept for the pair (:func:`merge_remeasured`: one entry per
    combination and machine, a newer re-timing of a suspect replacing that entry alone, every
    other kept as it was). The record is read, merged and replaced under a lock of its directory
    (two gates of one pair merge, neither loses the other's entries) and written atomically: whole,
    or not at all. Returns the record, or None where it already held every entry (nothing written).
    A record that is not what a gate keeps is refused (DamagedRunData), never replaced."""
    import fcntl

    target = _remeasured_path(run_dir, baseline, candidate)
    if not entries:
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd is closed, however this process ends
        kept = _read_remeasured(target) if target.exists() or target.is_symlink() else []
        merged = merge_remeasured(kept, entries)
        if merged == kept:
            return None
        cache.write_sealed_json(target, merged)
    finally:
        os.close(fd)
    return target


def _remeasured_key(entry: dict) -> tuple:
    return tuple(entry["ids"]), entry.get("machine")


def merge_remeasured(kept: list[dict], new: list[dict]) -> list[dict]:
    """The entries ``kept`` with ``new`` merged in: one per combination and machine, a new one in
    place of the kept one of its combination and machine (the newer re-timing of that suspect),
    unless it says the same (the same samples, verdict and re-timings: kept as it was written);
    the others kept, in their order, the new ones after them."""
    merged = {_remeasured_key(e): e for e in kept}
    for entry in new:
        key = _remeasured_key(entry)
        old = merged.get(key)
        if old is None or {**old, "remeasured": _retimings(old.get("remeasured"))} != {
                **entry, "remeasured": _retimings(entry.get("remeasured"))}:
            merged[key] = entry
    return list(merged.values())


def _read_remeasured(target: Path) -> list[dict]:
    """The entries of one record a gate kept, as written, verified (DamagedRunData otherwise)."""
    if target.is_symlink() and not target.exists():
        raise DamagedRunData(f"{target}: a link to nothing ({os.readlink(target)}), where a gate keeps its "
                             "re-measurement; remove it, and the gate times the suspects again")
    if target.stat().st_size > MAX_FILE_BYTES:
        raise DamagedRunData(f"{target}: too large to be a gate's re-measurement")
    entries = cache.read_sealed_json(target)
    if not isinstance(entries, list) or not all(_remeasured_entry(e) for e in entries):
        raise DamagedRunData(f"{target}: damaged (not the re-measurements a gate kept); remove it, the gate "
                             "times the suspects again")
    return entries


def load_remeasured(run_dir: Path) -> dict[tuple[str, str], list[dict]]:
    """(baseline, candidate) -> what earlier gates found by timing again, each file verified."""
    found = {}
    for target in sorted((Path(run_dir) / RUNS / GATE).glob("*.json")):
        baseline, _, candidate = target.stem.partition("-")
        check_commit(baseline, str(target)), check_commit(candidate, str(target))
        entries = _read_remeasured(target)
        found[(baseline, candidate)] = [{**e, "remeasured": _retimings(e["remeasured"])} for e in entries]
    return found


def _retimings(again) -> list[list[float]] | None:
    """The (ratio, p) of each re-timing, in order; a suite that timed a suspect again only once kept
    that one (ratio, p) bare."""
    def pair(v):
        return isinstance(v, list) and len(v) == 2 and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)

    if pair(again):
        return [again]
    return again if isinstance(again, list) and again and all(pair(v) for v in again) else None


def _remeasured_entry(entry) -> bool:
    """One re-measured suspect: its combination, verdict, the digest of the samples it judged, and
    the (ratio, p) of each time they were timed again."""
    return (isinstance(entry, dict) and isinstance(entry.get("ids"), list) and len(entry["ids"]) == 4
            and all(isinstance(i, str) for i in entry["ids"]) and isinstance(entry.get("verdict"), str)
            and isinstance(entry.get("samples"), str) and _retimings(entry.get("remeasured")) is not None)
