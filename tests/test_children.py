"""Children end with everything they started: a grandchild in a process group of its own (as asv
runs its install commands, a TVM source build among them) goes too."""

import os
import time

from suite import children

GRANDCHILD = ("import os, subprocess, sys, time; "
              "p = subprocess.Popen(['sleep', '300'], process_group=0); "
              "print(p.pid, flush=True); time.sleep(300)")


def test_end_stops_the_whole_session_not_only_the_childs_group():
    import subprocess

    child = children.start_python(["-c", GRANDCHILD], stdout=subprocess.PIPE, text=True)
    grandchild = int(child.stdout.readline())
    assert os.getpgid(grandchild) == grandchild != os.getpgid(child.pid)  # a group of its own
    assert grandchild in children.session_members(child.pid)
    children.end(child)
    deadline = time.monotonic() + 10
    while children.session_members(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not children.session_members(child.pid)
