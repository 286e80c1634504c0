"""Children end with everything they started: a grandchild in a process group of its own (as asv
runs its install commands, a TVM source build among them) goes too."""

import os
import signal
import subprocess
import sys

import psutil
from conftest import eventually

from suite import children

GRANDCHILD = ("import os, subprocess, sys, time; "
              "p = subprocess.Popen(['sleep', '300'], process_group=0); "
              "print(p.pid, flush=True); time.sleep(300)")


def test_end_stops_the_whole_session_not_only_the_childs_group():
    child = children.start_python(["-c", GRANDCHILD], stdout=subprocess.PIPE, text=True)
    grandchild = int(child.stdout.readline())
    assert os.getpgid(grandchild) == grandchild != os.getpgid(child.pid)  # a group of its own
    assert grandchild in children.session_members(child.pid)
    children.end(child)
    assert eventually(lambda: not children.session_members(child.pid), timeout_s=10)


#: A parent that starts a child and dies at once, before the child's Python has started (let
#: alone asked to die with it): as the suite killed right after "measure: started" does.
ORPHANING_PARENT = ("import os, subprocess; from suite import children; "
                    "child = children.start_python(['-c', 'import time; time.sleep(300)'], "
                    "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
                    "print(child.pid, flush=True); os._exit(0)")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_child_whose_parent_died_before_it_could_die_with_it_ends_at_once():
    """PR_SET_PDEATHSIG holds from the child's call on: a parent gone before it never sends the
    signal. The child sees it has another parent by then and ends, instead of running its
    command (the helper measuring every combination for minutes) as an orphan."""
    parent = subprocess.run([sys.executable, "-c", ORPHANING_PARENT], capture_output=True, text=True, timeout=60)
    assert parent.returncode == 0, parent.stderr
    orphan = int(parent.stdout)
    try:
        assert eventually(lambda: not _alive(orphan), timeout_s=20), "the child outlived the parent that started it"
    finally:
        if _alive(orphan):
            os.kill(orphan, signal.SIGKILL)
