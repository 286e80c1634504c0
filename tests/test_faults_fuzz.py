"""Faults of `tvm-suite fuzz`: each row a kind of fault and the tests that show it is handled."""

import json
import signal
import socket
import subprocess
import sys
import threading
import time

import filelock
import pytest
from conftest import SUITE_BIN, check_fault_table, eventually, one_line, run_cli

FAULTS = {
    "unknown workload, target or dtype: one line, exit 2": [
        "test_unknown_workload", "test_unknown_target", "test_unknown_dtype"],
    "a target that runs no code here, or whose design space MetaSchedule has not: one line, exit 2": [
        "test_compile_only_and_untunable_hexagon_targets_are_refused"],
    "a target that does not run the dtype asked for: one line, exit 2": ["test_a_target_without_the_dtype_is_refused"],
    "--trace-timeout zero, negative or absurd: one line, exit 2": ["test_trace_timeout_zero_negative_or_absurd"],
    "--thresholds missing, a directory, damaged (not TOML) or out of range: one line, exit 2, before any work": [
        "test_thresholds_missing_or_a_directory", "test_thresholds_damaged_or_out_of_range"],
    "--cluster empty, unreachable or no Dask scheduler: one line, exit 2, before any work": [
        "test_cluster_address_empty", "test_cluster_unreachable", "test_cluster_not_a_dask_scheduler"],
    "--cluster workers of another TVM build: refused naming both builds, nothing judged": [
        "test_cluster_worker_of_another_build_is_refused"],
    "Ctrl-C mid-campaign: every judged schedule kept, none of the ended children's a finding; a rerun continues": [
        "test_ctrl_c_keeps_every_judged_schedule_and_a_rerun_continues"],
    "the worker pool closed (Ctrl-C) while threads of the campaign ask, wait for a worker, or are between taking "
    "one and starting its child: no child started, none waited on, every thread told it is stopping at once": [
        "test_a_closed_pool_starts_no_child_and_every_thread_asking_returns_at_once",
        "test_a_pool_closed_between_a_threads_take_and_its_start_starts_no_child"],
    "Ctrl-C at a phase boundary, or one whose exception was dropped where it landed (during design-space "
    "generation): "
    "exit 130 in one line, every judged schedule kept": [
        "test_ctrl_c_at_the_first_phase_line_ends_the_campaign_with_130",
        "test_ctrl_c_dropped_during_design_space_generation_still_ends_the_campaign"],
    "--traces 0 or absurd, --minutes <= 0 or absurd: one line, exit 2": [
        "test_traces_zero_or_absurd", "test_minutes_zero_negative_or_absurd"],
    "an out dir another fuzz is using: refused in one line naming that campaign (its seed, pid, host and start), "
    "its lock the campaign's own (no runs/ folder)": ["test_out_dir_in_use"],
    "an out dir a campaign of an older suite made (its lock in runs/.lock): continued from its journal; one that "
    "campaign holds now refused naming it; a runs/ of anything else is the user's": [
        "test_an_out_dir_of_the_older_layout_is_continued", "test_an_out_dir_an_older_suites_campaign_holds_is_refused"],
    "a journal line whose outcome is spelled otherwise (the worker's old 'build_failed', lower case) or a finding "
    "of an outcome that is none: one line naming the journal and the line, exit 2": [
        "test_a_journal_line_of_an_outcome_spelled_otherwise_is_refused"],
    "an out dir that is a file: one line, exit 2": ["test_out_dir_is_a_file"],
    "an out dir that is a link to nothing: one line, exit 2": ["test_out_dir_is_a_link_to_nothing"],
    "an out dir holding the user's files: refused, nothing replaced": ["test_out_dir_of_the_users_files_is_refused"],
    "a trace that hangs: a TIMEOUT finding, the campaign goes on": ["test_a_hang_is_a_timeout_finding"],
    "an interrupted campaign: a rerun continues from the journal": ["test_rerun_continues_from_the_journal"],
}


def test_every_fault_kind_has_cases():
    check_fault_table(FAULTS, globals())


def _one_line_exit_2(done):
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr


def test_unknown_workload(cli, tmp_path):
    assert "nosuch.conv" in _one_line_exit_2(cli("fuzz", "--workloads", "nosuch.conv", "--out", tmp_path / "o"))


def test_unknown_target(cli, tmp_path):
    assert "vulkan9" in _one_line_exit_2(cli("fuzz", "--targets", "vulkan9", "--out", tmp_path / "o"))


def test_unknown_dtype(cli, tmp_path):
    assert "bfloat7" in _one_line_exit_2(cli("fuzz", "--dtypes", "bfloat7", "--out", tmp_path / "o"))


def test_a_target_without_the_dtype_is_refused(cli, tmp_path):
    """llvm-avx512bf16 runs bfloat16 alone: fuzzing float32 there was judged as llvm's own code."""
    assert _one_line_exit_2(cli("fuzz", "--targets", "llvm,llvm-avx512bf16", "--out", tmp_path / "o")).strip().endswith(
        "--targets llvm-avx512bf16: llvm-avx512bf16 does not run float32: only bfloat16 has native instructions to "
        "ask for; the other dtypes run on llvm")
    assert not (tmp_path / "o" / "journal.jsonl").exists()


def test_compile_only_and_untunable_hexagon_targets_are_refused(cli, tmp_path):
    assert "nothing runs its code here (compile-only)" in _one_line_exit_2(
        cli("fuzz", "--targets", "hexagon-v68", "--out", tmp_path / "o"))
    from suite.targets import hexagon

    if not hexagon.missing_tools():  # runs, but MetaSchedule has no design space of its own for it
        assert "design space" in _one_line_exit_2(cli("fuzz", "--targets", "hexagon-v68-emu", "--out", tmp_path / "o"))


def test_trace_timeout_zero_negative_or_absurd(cli, tmp_path):
    for value in ("0", "-5", "nan", "3601", "soon"):
        assert "--trace-timeout" in _one_line_exit_2(cli("fuzz", "--trace-timeout", value, "--out", tmp_path / "o"))


def test_thresholds_missing_or_a_directory(cli, tmp_path):
    assert f"thresholds file {tmp_path / 'gone.toml'} does not exist" in _one_line_exit_2(
        cli("fuzz", "--thresholds", tmp_path / "gone.toml", "--out", tmp_path / "o"))
    assert not (tmp_path / "o").exists()  # refused before the out directory is made
    (tmp_path / "dir.toml").mkdir()
    assert f"thresholds file {tmp_path / 'dir.toml'} is a directory" in _one_line_exit_2(
        cli("fuzz", "--thresholds", tmp_path / "dir.toml", "--out", tmp_path / "o"))
    assert "empty path" in _one_line_exit_2(cli("fuzz", "--thresholds", "", "--out", tmp_path / "o"))


def test_thresholds_damaged_or_out_of_range(cli, tmp_path):
    damaged = tmp_path / "damaged.toml"
    damaged.write_bytes(b"[bound\nlambda = \xff\x00")
    assert f"{damaged}: not a readable TOML file" in _one_line_exit_2(
        cli("fuzz", "--thresholds", damaged, "--out", tmp_path / "o"))
    for body, says in (("[bound]\nlambda = -1.0\n", "bound.lambda = -1.0 is out of range: it must be above 0"),
                       ("[bound]\nlambda = \"big\"\n", "bound.lambda must be a finite number, not 'big'"),
                       ("[bound]\nmax_fraction = 0\n", "bound.max_fraction = 0 is out of range")):
        (tmp_path / "range.toml").write_text(body)
        assert f"{tmp_path / 'range.toml'}: {says}" in _one_line_exit_2(
            cli("fuzz", "--thresholds", tmp_path / "range.toml", "--out", tmp_path / "o"))
    assert not (tmp_path / "o").exists()


def test_cluster_address_empty(cli, tmp_path):
    assert "names no Dask scheduler" in _one_line_exit_2(cli("fuzz", "--cluster", " ", "--out", tmp_path / "o"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.cluster
@pytest.mark.slow
def test_cluster_unreachable(tmp_path):
    """A port nothing listens on (Dask's connect timeout 1 s): one line, nothing judged."""
    pytest.importorskip("distributed")
    port = _free_port()
    done = run_cli("fuzz", "--cluster", f"tcp://127.0.0.1:{port}", "--out", tmp_path / "o",
                   env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "1s"})
    assert f"cannot reach the Dask scheduler at tcp://127.0.0.1:{port}" in _one_line_exit_2(done)
    assert not (tmp_path / "o" / "journal.jsonl").exists()


@pytest.mark.cluster
@pytest.mark.slow
def test_cluster_not_a_dask_scheduler(tmp_path):
    """Something that answers but is no Dask scheduler (it sends other bytes): one line."""
    pytest.importorskip("distributed")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]

        def answer():
            conn, _ = server.accept()
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.2 hello there\r\n")
                time.sleep(2)

        thread = threading.Thread(target=answer, daemon=True)
        thread.start()
        done = run_cli("fuzz", "--cluster", f"tcp://127.0.0.1:{port}", "--out", tmp_path / "o",
                       env={"DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"})
    assert "not as a Dask scheduler" in _one_line_exit_2(done)


@pytest.mark.cluster
@pytest.mark.slow
def test_cluster_worker_of_another_build_is_refused(tmp_path):
    pytest.importorskip("distributed")
    from test_cluster import Cluster

    from suite.compat import release

    other = Cluster(tmp_path, workers=1, env={"TVM_SUITE_TEST_FAKE_BUILD": "0.27.0-0123456789"})
    try:
        done = run_cli("fuzz", "--workloads", "miniresnet.matmul_add.16-10", "--traces", "1",
                       "--cluster", other.address, "--out", tmp_path / "o")
    finally:
        other.close()
    line = _one_line_exit_2(done)
    assert f"runs TVM build 0.27.0-0123456789, this machine {release.build_id()}" in line
    assert not (tmp_path / "o" / "journal.jsonl").exists()


@pytest.mark.longest
@pytest.mark.slow
def test_ctrl_c_keeps_every_judged_schedule_and_a_rerun_continues(tmp_path):
    """Slow: SIGINT once schedules are being judged on both workers: exit 130 in one line saying
    what is kept; every journal line whole, none a CRASH of a child ended by the interruption; a
    rerun judges exactly what is left."""
    out = tmp_path / "o"
    args = ["fuzz", "--workloads", "miniresnet.conv2d_add_relu.16x16x8-k3s1-8", "--traces", "6", "--out", str(out)]
    command = [str(SUITE_BIN)] if SUITE_BIN.exists() else [sys.executable, "-m", "suite.cli"]
    process = subprocess.Popen(command + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    journal = out / "journal.jsonl"
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and process.poll() is None:
        if journal.exists() and any('"kind": "trace"' in line for line in journal.read_text().splitlines()):
            break
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 130, stderr
    assert "rerun with the same --seed and --out to continue" in stderr.strip().splitlines()[-1]
    kept = [json.loads(line) for line in journal.read_text().splitlines()]
    assert kept and all(r["outcome"] not in ("CRASH", "TIMEOUT") for r in kept), kept
    assert len({r["id"] for r in kept}) == len(kept) < 6 + 6
    again = run_cli(*args, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["judged_this_run"] == 6 + 6 - len(kept)
    assert len(journal.read_text().splitlines()) == 6 + 6


#: The worker child's stand-in (no TVM): ready at once, then each request noted in the file its
#: argument names, and never answered (a build that takes longer than the test).
_STAND_IN = ("import sys; print('{\"ready\": true}', flush=True); "
             "[open(sys.argv[1], 'a').write('request\\n') for _ in sys.stdin]")


def _stand_in_children(monkeypatch, noted, before_start=None):
    """The worker's children started as :data:`_STAND_IN` (``before_start()`` called first, where
    given); the list of those started."""
    from suite import children, sandbox

    started = []

    def start(args, scratch, limits, *, confined=True, env=None, **popen):
        if before_start is not None:
            before_start()
        started.append(children.start_python(["-c", _STAND_IN, str(noted)], **popen))
        return started[-1]

    monkeypatch.setattr(sandbox, "start_python", start)
    return started


def _asking(pool, tmp_path, answers):
    """A thread of the campaign asking ``pool`` for a schedule: its answer, or the error it got, in ``answers``."""
    def ask():
        try:
            answers.append(pool.ask({"dir": str(tmp_path / "request")}, 120))
        except Exception as err:  # noqa: BLE001  (what the thread got is the test's to judge)
            answers.append(err)

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread


def _waiting(thread) -> bool:
    """Whether ``thread`` is blocked in a wait of :mod:`threading` (a condition, a queue's get)."""
    frame = sys._current_frames().get(thread.ident)
    while frame is not None:
        if frame.f_code.co_name == "wait" and frame.f_code.co_filename == threading.__file__:
            return True
        frame = frame.f_back
    return False


def _ended_every(started):
    from suite import children

    for process in started:
        if process.poll() is None:
            children.end(process)


def test_a_closed_pool_starts_no_child_and_every_thread_asking_returns_at_once(tmp_path, monkeypatch):
    """Fast, no TVM (the children are stand-ins that never answer): two threads each waiting on its
    worker's child, two more waiting for a worker; the pool closes (Ctrl-C). Both children are
    ended, no new one is started for the threads that waited (they used to take the workers given
    back and start children nobody would answer, waited on up to --trace-timeout), and every thread
    is told the campaign is stopping within a second or two."""
    from suite.fuzz import pool as pools

    noted = tmp_path / "requests"
    started = _stand_in_children(monkeypatch, noted)
    pool = pools.LocalPool(tmp_path / "work", 2)
    answers, threads = [], []
    try:
        threads += [_asking(pool, tmp_path, answers) for _ in range(2)]
        assert eventually(lambda: noted.exists() and len(noted.read_text().splitlines()) == 2, 60)
        threads += [_asking(pool, tmp_path, answers) for _ in range(2)]
        assert eventually(lambda: all(_waiting(t) for t in threads[2:]), 10)
        pool.close()
        deadline = time.monotonic() + 2
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        assert not any(t.is_alive() for t in threads), "a thread still waits after the pool closed"
        assert len(started) == 2, "a child was started after the pool closed"
        assert all(p.poll() is not None for p in started)
        assert len(answers) == 4 and all(isinstance(a, pools.Stopping) for a in answers), answers
        assert "stopping" in str(answers[0])
        with pytest.raises(pools.Stopping):  # and so is any later request, at once
            pool.ask({"dir": str(tmp_path / "request")}, 120)
        assert len(started) == 2
    finally:
        _ended_every(started)


@pytest.mark.parametrize("when", ["after the take", "as its child starts"])
def test_a_pool_closed_between_a_threads_take_and_its_start_starts_no_child(tmp_path, monkeypatch, when):
    """Fast, no TVM: the race of a Ctrl-C that closes the pool just after a thread took a worker
    (before the worker starts its child), or while the child is being started, made certain by
    closing it there. No child is left running, none is sent the request, and the thread is told
    the campaign is stopping at once, not after --trace-timeout."""
    from suite.fuzz import pool as pools
    from suite.fuzz.worker import Worker

    noted = tmp_path / "requests"
    pool = None
    started = _stand_in_children(monkeypatch, noted, before_start=(lambda: pool.close())
                                 if when == "as its child starts" else None)
    pool = pools.LocalPool(tmp_path / "work", 1)
    if when == "after the take":
        real_ask = Worker.ask

        def ask_after_the_close(worker, request, timeout_s):
            pool.close()
            return real_ask(worker, request, timeout_s)

        monkeypatch.setattr(Worker, "ask", ask_after_the_close)
    answers = []
    try:
        thread = _asking(pool, tmp_path, answers)
        thread.join(2)
        assert not thread.is_alive(), "the thread waits on a child after the pool closed"
        assert len(answers) == 1 and isinstance(answers[0], pools.Stopping), answers
        assert len(started) == (0 if when == "after the take" else 1)
        assert all(p.poll() is not None for p in started), "a child started as the pool closed is left running"
        assert not noted.exists(), "a child was sent a request after the pool closed"
    finally:
        _ended_every(started)


def _campaign_process(args, code=None):
    """`tvm-suite ARGS` as a process (``code``: Python run first in it, the CLI after), its stderr read line by line."""
    if code is None:
        command = [str(SUITE_BIN)] if SUITE_BIN.exists() else [sys.executable, "-m", "suite.cli"]
    else:
        command = [sys.executable, "-c", "import sys\n" + code + "\nfrom suite import cli\nsys.exit(cli.main(sys.argv[1:]))"]
    return subprocess.Popen(command + [str(a) for a in args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, bufsize=1)


def _interrupted_at(process, line_starts: str) -> tuple[list[str], float]:
    """SIGINT to ``process`` as soon as its stderr shows a line starting with ``line_starts``; its
    stderr lines up to its end, and the seconds from the signal to its end (at most 300)."""
    lines, signalled = [], None
    reader = threading.Thread(target=lambda: lines.extend(iter(process.stderr.readline, "")), daemon=True)
    for line in iter(process.stderr.readline, ""):
        lines.append(line.rstrip("\n"))
        if line.startswith(line_starts):
            process.send_signal(signal.SIGINT)
            signalled = time.monotonic()
            break
    assert signalled is not None, lines
    reader.start()
    process.wait(timeout=300)
    reader.join(10)
    return [line.rstrip("\n") for line in lines], time.monotonic() - signalled


def _kept_whole(out) -> list:
    """The journal's lines, each verified (its seal), none a child ended by the interruption."""
    from suite.fuzz.journal import Journal

    kept = list(Journal(out / "journal.jsonl").load().values())
    assert all(line.outcome.value not in ("CRASH", "TIMEOUT") for line in kept), kept
    return kept


_INTERRUPTED_LINE = ("tvm-suite: interrupted (SIGINT): every schedule judged is in OUT/journal.jsonl; rerun with the "
                     "same --seed and --out to continue")


@pytest.mark.slow
def test_ctrl_c_at_the_first_phase_line_ends_the_campaign_with_130(tmp_path):
    """Slow (a worker child starts): SIGINT as soon as the campaign says where it builds and runs
    (its first line, stderr read line by line): exit 130 with the one line, at once (no schedule
    waited for), and whatever the journal holds whole."""
    out = tmp_path / "o"
    process = _campaign_process(["fuzz", "--workloads", "miniresnet.conv2d_add_relu.16x16x8-k3s1-8", "--traces", "1",
                                 "--out", out])
    lines, seconds = _interrupted_at(process, "fuzz: building and running on")
    assert process.returncode == 130, lines
    assert lines[-1] == _INTERRUPTED_LINE, lines
    assert not any("Traceback" in line for line in lines), lines
    assert seconds < 60, f"{seconds:.0f} s from the signal to the end"
    if (out / "journal.jsonl").exists():
        _kept_whole(out)


#: Run in the campaign's process first: design-space generation that drops a Ctrl-C, as a callback
#: that swallows the exception does (a Ctrl-C during design-space generation was once ignored so):
#: it says so on stderr, waits for the signal, catches its KeyboardInterrupt, and goes on.
_DROPS_CTRL_C = """
import sys, time
from suite.fuzz import sampling
real = sampling.design_space
def design_space(*args):
    print("test: generating the design space", file=sys.stderr, flush=True)
    caught, deadline = False, time.monotonic() + 300
    while not caught and time.monotonic() < deadline:
        try:
            time.sleep(0.05)
        except KeyboardInterrupt:
            caught = True
    return real(*args)
sampling.design_space = design_space
"""


@pytest.mark.slow
def test_ctrl_c_dropped_during_design_space_generation_still_ends_the_campaign(tmp_path):
    """Slow (the design space is made, and the named orders judged beside it): a Ctrl-C that design-
    space generation catches and drops (see _DROPS_CTRL_C) ends the campaign all the same, where it
    checks for a signal after the generation: exit 130 in one line, every schedule judged before it
    kept whole. It used to run on, judge every trace and exit 0."""
    out = tmp_path / "o"
    process = _campaign_process(["fuzz", "--workloads", "miniresnet.conv2d_add_relu.16x16x8-k3s1-8", "--traces", "2",
                                 "--out", out], code=_DROPS_CTRL_C)
    lines, _ = _interrupted_at(process, "test: generating the design space")
    assert process.returncode == 130, lines
    assert lines[-1] == _INTERRUPTED_LINE, lines
    assert not any(" trace " in line for line in lines), "a trace was judged after the Ctrl-C"
    assert all(line.kind == "order" for line in _kept_whole(out))


def test_traces_zero_or_absurd(cli, tmp_path):
    for value in ("0", "100001", "-3", "many"):
        _one_line_exit_2(cli("fuzz", "--traces", value, "--out", tmp_path / "o"))


def test_minutes_zero_negative_or_absurd(cli, tmp_path):
    for value in ("0", "-1", "nan", "1e9"):
        _one_line_exit_2(cli("fuzz", "--minutes", value, "--out", tmp_path / "o"))


def _command():
    return [str(SUITE_BIN)] if SUITE_BIN.exists() else [sys.executable, "-m", "suite.cli"]


def test_out_dir_in_use(cli, tmp_path):
    """A campaign (a process of its own) holds its directory: a second one there is refused in one
    line naming the campaign that holds it (its seed, pid, host and start), while the first is
    stopped holding it. The lock is the campaign's own file (no runs/ folder), and it goes with the
    campaign however that ends (killed here: an flock)."""
    out = tmp_path / "o"
    lock = out / ".tvm-suite-fuzz.lock"
    first = subprocess.Popen(_command() + ["fuzz", "--workloads", "miniresnet.matmul_add.16-10", "--traces", "1",
                                           "--seed", "7", "--out", str(out)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        held = None
        deadline = time.monotonic() + 300
        while held is None and first.poll() is None and time.monotonic() < deadline:
            try:
                held = json.loads(lock.read_text())
            except (OSError, ValueError):
                time.sleep(0.05)
        assert held and held["pid"] == first.pid, (held, first.poll())
        first.send_signal(signal.SIGSTOP)  # holding the lock, whatever it was doing
        line = one_line(cli("fuzz", "--workloads", "miniresnet.matmul_add.16-10", "--traces", "1", "--out", out),
                        f"{out} is in use by another fuzz campaign (seed 7, pid {first.pid} on "
                        f"{socket.gethostname()}, started {held['started']}): wait for it to end, "
                        "or give another --out")
        assert "0.27" not in line and "runs" not in line
        assert lock.is_file() and not (out / "runs").exists()
    finally:
        first.kill()  # stopped or not
        first.communicate(timeout=120)
    with filelock.FileLock(lock, timeout=10):  # the killed campaign's lock went with it
        pass


def _old_layout(out):
    """The directory a campaign of a suite before its own lock left: the journal of every schedule
    of FUZZ (test_faults_sealed), its mark, and the run store's lock, runs/.lock, naming its holder."""
    from test_faults_sealed import _judged_campaign

    journal = _judged_campaign(out)
    (out / "runs").mkdir()
    (out / "runs" / ".lock").write_text(json.dumps({"pid": 4242, "host": "elsewhere", "commit": "0.27.0.dev0",
                                                    "command": "fuzz", "started": "2025-01-02 03:04:05"}))
    return journal


def test_an_out_dir_of_the_older_layout_is_continued(cli, tmp_path):
    """Every schedule the older campaign judged is read from its journal and none judged again; its
    runs/.lock is left as it was, and the campaign's own lock is beside it. A runs/ holding anything
    but that lock, in a directory no fuzz marked, is the user's: refused, nothing touched."""
    from test_faults_sealed import FUZZ

    out = tmp_path / "o"
    journal = _old_layout(out)
    lines, old_lock = journal.read_text(), (out / "runs" / ".lock").read_text()
    done = cli(*FUZZ, "--out", out)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["judged_this_run"] == 0 and sum(summary["table"]["seed.conv2d_nhwc_7x7s2 float32 llvm"].values()) == 7
    assert journal.read_text() == lines and (out / "runs" / ".lock").read_text() == old_lock
    assert sorted(p.name for p in (out / "runs").iterdir()) == [".lock"] and (out / ".tvm-suite-fuzz.lock").is_file()
    theirs = tmp_path / "theirs"
    (theirs / "runs").mkdir(parents=True)
    (theirs / "runs" / "notes.txt").write_text("mine")
    one_line(cli(*FUZZ, "--out", theirs), "holds files a fuzz did not make (runs)")
    assert sorted(p.name for p in theirs.rglob("*")) == ["notes.txt", "runs"]


def test_an_out_dir_an_older_suites_campaign_holds_is_refused(cli, tmp_path):
    """A campaign of the older suite working there now holds runs/.lock (an flock, as the run
    store's lock): refused in one line naming it, nothing judged, its lock file as it was."""
    from test_faults_sealed import FUZZ

    out = tmp_path / "o"
    journal = _old_layout(out)
    lines, old_lock = journal.read_text(), (out / "runs" / ".lock").read_text()
    with filelock.FileLock(out / "runs" / ".lock"):
        one_line(cli(*FUZZ, "--out", out), f"{out} is in use by another fuzz campaign (an older suite's, TVM "
                                           "0.27.0.dev0, pid 4242 on elsewhere, started 2025-01-02 03:04:05)")
    assert journal.read_text() == lines and (out / "runs" / ".lock").read_text() == old_lock
    assert not (out / "summary.json").exists()


def test_a_journal_line_of_an_outcome_spelled_otherwise_is_refused(cli, tmp_path):
    """Journal lines sealed as the chain says (test_faults_sealed) whose outcome is the worker's old
    spelling or another case, or that file a finding under an outcome that is none: one line naming
    the journal and the line, never a KeyError or a silent count."""
    from test_faults_sealed import FUZZ, _judged_campaign, _sealed

    journal = _judged_campaign(tmp_path / "o")
    lines = [json.loads(line) for line in journal.read_text().splitlines()]
    for line in lines:
        del line["seal"]
    for spelled in ("build_failed", "changed", "Reordered", " CHANGED"):
        journal.write_text(_sealed(lines[:2] + [{**lines[2], "outcome": spelled}] + lines[3:]))
        one_line(cli(*FUZZ, "--out", tmp_path / "o"), f"{journal}, line 3", f"'outcome' is {spelled!r}")
    finding = {"dir": "findings/x", "key": "SKIPPED: order default"}
    journal.write_text(_sealed(lines[:2] + [{**lines[2], "outcome": "SKIPPED", "finding": finding}] + lines[3:]))
    one_line(cli(*FUZZ, "--out", tmp_path / "o"), f"{journal}, line 3", "a finding of SKIPPED, which is no finding")
    journal.write_text(_sealed(lines))
    assert cli(*FUZZ, "--out", tmp_path / "o").returncode == 0


def test_out_dir_is_a_file(cli, tmp_path):
    (tmp_path / "o").write_text("not a directory")
    assert "is a file" in _one_line_exit_2(cli("fuzz", "--out", tmp_path / "o"))


def test_out_dir_is_a_link_to_nothing(cli, tmp_path):
    (tmp_path / "o").symlink_to(tmp_path / "gone")
    assert "a link to nothing" in _one_line_exit_2(cli("fuzz", "--out", tmp_path / "o"))
    assert not (tmp_path / "gone").exists()


def test_out_dir_of_the_users_files_is_refused(cli, tmp_path):
    out = tmp_path / "o"
    (out / "work").mkdir(parents=True)
    (out / "work" / "notes.txt").write_text("mine")
    (out / "summary.json").write_text("mine too")
    stderr = _one_line_exit_2(cli("fuzz", "--out", out))
    assert "holds files a fuzz did not make (summary.json, work)" in stderr
    assert (out / "work" / "notes.txt").read_text() == "mine" and (out / "summary.json").read_text() == "mine too"


@pytest.mark.slow
@pytest.mark.longest
def test_a_hang_is_a_timeout_finding(cli, tmp_path):
    """Slow (the design space, then a worker started again after each timeout): a trace timeout too
    short for any build makes every schedule a TIMEOUT finding, with its report, and exit 14. (A
    matmul of 16 x 10: its design space and the unscheduled build, which no timeout cuts, in a second.)"""
    done = cli("fuzz", "--workloads", "miniresnet.matmul_add.16-10", "--traces", "1", "--trace-timeout", "0.01",
               "--out", tmp_path / "o", "--json")
    summary = json.loads(done.stdout)
    assert done.returncode == 14 and summary["exit_status"] == 14
    assert summary["findings"] and all(f["outcome"] == "TIMEOUT" for f in summary["findings"])
    assert list((tmp_path / "o" / "findings").glob("*/report.md"))


#: A matmul of 16 x 10: its builds and design space take a fraction of a second.
SMALL = "miniresnet.matmul_add.16-10"


@pytest.mark.slow
def test_rerun_continues_from_the_journal(cli, tmp_path):
    """Slow: a campaign stopped by its --minutes (as by Ctrl-C: the journal has what was judged)
    continues on a rerun with the same seed, judging only what is left."""
    first = cli("fuzz", "--workloads", SMALL, "--traces", "1", "--minutes", "0.001", "--out", tmp_path / "o", "--json")
    assert first.returncode == 0 and json.loads(first.stdout)["stopped"] == "time"
    journal = tmp_path / "o" / "journal.jsonl"
    judged = len(journal.read_text().splitlines()) if journal.exists() else 0
    second = cli("fuzz", "--workloads", SMALL, "--traces", "1", "--out", tmp_path / "o", "--json")
    summary = json.loads(second.stdout)
    assert second.returncode == 0 and summary["judged_this_run"] == 7 - judged
    assert len((tmp_path / "o" / "journal.jsonl").read_text().splitlines()) == 7
