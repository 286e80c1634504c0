"""The progress of a long phase: quiet into a file or a pipe (a line every so often, and the end),
a bar as wide as the terminal on one, and a time left estimated by cost, not by count."""

import io
import re

from suite import progress
from suite.progress import Progress


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_into_a_file_a_line_every_so_often_and_the_end(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    out = io.StringIO()
    shown = Progress("measure", 4, stream=out, every_s=10)
    for seconds in (1, 1, 20, 1):
        clock.now += seconds
        shown.step("w float16 llvm default")
    shown.finish()
    lines = out.getvalue().splitlines()
    assert lines == ["measure: 3/4 (75%), 0:22 elapsed, about 0:07 left  w float16 llvm default",
                     "measure: 4/4 (100%), 0:23 elapsed, about 0:00 left  w float16 llvm default",
                     "measure: done in 0:23"]


def test_the_time_left_is_by_cost_of_each_kind(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(progress.time, "monotonic", clock)
    costs = [("llvm", 1.0), ("emulated", 2.0), ("llvm", 3.0), ("emulated", 1.0), ("cuda", 2.0)]
    shown = Progress("measure", len(costs), stream=io.StringIO(), costs=costs)
    assert shown.left() is None  # nothing measured: nothing said
    clock.now += 2  # llvm: 2 s per unit
    shown.step()
    clock.now += 20  # emulated: 10 s per unit
    shown.step()
    # llvm 3 units at 2 s, emulated 1 at 10 s, cuda (not seen) 2 units at the rate of all (22 s / 3 units)
    assert abs(shown.left() - (6 + 10 + 2 * 22 / 3)) < 1e-9
    clock.now += 5  # the step under way has begun: what it took so far is not left
    assert abs(shown.left() - (1 + 10 + 2 * 22 / 3)) < 1e-9
    clock.now -= 27
    counted = Progress("measure", len(costs), stream=io.StringIO())  # no costs: every step alike
    clock.now += 2
    counted.step()
    clock.now += 20
    counted.step()
    clock.now += 5
    assert counted.left() == 27 / 2 * 3


def test_on_a_terminal_a_bar_as_wide_as_it(monkeypatch):
    monkeypatch.setenv("COLUMNS", "72")
    monkeypatch.setattr(progress.time, "monotonic", Clock())  # "done in 0:00" however loaded the machine
    screen = Terminal()
    with Progress("measure", 3, stream=screen) as shown:
        shown.step("resnet50.conv2d_add_relu.56x56x64-k3s1-64 float16 hexagon-v68-qf seed-tuned")
        shown._bar.refresh()
    drawn = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())
    frames = [f for f in re.split(r"[\r\n]", drawn) if f.strip()]
    assert any(f.startswith("measure: ") and "1/3" in f for f in frames), frames
    assert max(len(f) for f in frames) <= 72, frames  # the label is cut to what fits
    assert frames[-1] == "measure: done in 0:00" and shown._bar is None  # the bar taken off, the end said
