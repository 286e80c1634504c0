"""A finding's program made small (issue 63): after its trace is delta-debugged
(:func:`suite.fuzz.blame.minimise`), the workload it schedules is shrunk while the failure holds,
so that what a TVM developer is handed is one short TVMScript program with small shapes.

The workload is its op chain (:mod:`suite.core.reference`'s: inputs, steps, output shape), and a
smaller one is an edited chain, made into a PrimFunc as the suite makes a model's
(:func:`prim_func`: Relax's own legalization and fusion, so the blocks keep their names and the
trace still finds them). The edits (:func:`edits`), each kept only where the program still fails:

- a fused stage dropped: an epilogue (the relu, the bias add after a conv2d or a matmul), or a
  producer whose output becomes an input of the stage after it;
- a size made smaller: the reduction (K, a conv2d's input channels and its kernel window), the
  output channels or columns, the output's rows or spatial extent, a conv2d's strides and
  dilation, each to the smallest of 1, 2, 4, ... that still fails (1 first, then bisected over
  those sizes, as if failing were monotone in the size).

The program kept is printed without its blocks' ``T.reads`` and ``T.writes`` where TVM's parser
infers the same (:func:`tidied`: the same program); :func:`bare` makes another, less what only
MetaSchedule reads, which the campaign keeps only where the report's own triage command judges it
failing as the finding did.

Each candidate's trace is first made one that replays on the smaller program
(:func:`suite.fuzz.blame.replayable`, no build); one that no longer replays, or keeps no
primitive, costs nothing. Then each primitive of the trace is dropped in turn on the small
program, where builds are cheap (a trace 1-minimal on the workload need not be on it); one whose
drop lost the failure is not tried again after another goes. Every
candidate is judged by ``judge``, the campaign's: the small before program
and the scheduled one built and run by the campaign's worker children (the same TVM, environment
and hooks), judged by triage's verdict against the float64 reference of the small chain; kept
where :func:`keeps` says it fails as the finding did.
"""

from __future__ import annotations

import ast
import copy
import functools
import json
import math
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from suite.fuzz import blame
from suite.fuzz.outcome import FINDINGS, Outcome

#: Judges a candidate, as the campaign judges a schedule: (the small chain, its trace) -> (its
#: outcome, a failure's message).
Judge = Callable[[dict, list], "tuple[Outcome, str]"]


def keeps(outcome: Outcome, message: str, again: Outcome, again_message: str) -> bool:
    """Whether a smaller program (``again``) still fails as the finding (``outcome``) did: the same
    verdict (a crash: the same first line, :func:`suite.fuzz.blame.same_failure`), or for a wrong
    result a more serious wrong verdict (:data:`suite.fuzz.outcome.FINDINGS`' order: SHIFTED, then
    UNDEFINED, then CHANGED). Small shapes make the rounding bound tight, so a SHIFTED error is
    proven beyond it there; and a stage dropped can make the output array itself what a dropped
    iteration leaves unwritten (UNDEFINED)."""
    if blame.same_failure(outcome, message, again, again_message):
        return True
    return outcome.is_wrong and again.is_wrong and FINDINGS.index(again) < FINDINGS.index(outcome)


# ----------------------------------------------------------------------------- programs of a chain

#: Relax's BlockBuilder is not thread-safe, and a campaign shrinks findings in several threads.
_BUILDING = threading.Lock()


def workload(original, chain: dict):
    """``original`` (a :class:`suite.core.workloads.Workload`) with the op chain ``chain``: its id
    is kept, so its inputs are drawn from the same seeds."""
    from suite.core import workloads

    return replace(original, chain=chain, flops=workloads.flop_count(chain))


def prim_func(small, dtype: str):
    """The PrimFunc of the workload ``small`` (:func:`workload`), made as the suite makes the
    original's: the seed's conv2d by TOPI (:func:`suite.core.workloads.prim_func`), int8 by
    :mod:`suite.core.quantized`, a model's fused function by Relax's LegalizeOps and FuseOps
    (:func:`suite.core.workloads.fuse`) of a graph of the chain's ops."""
    with _BUILDING:
        return _made(small.model, dtype, json.dumps(small.chain, sort_keys=True))


@functools.lru_cache(maxsize=64)  # a candidate's is made again for its trace's replay, and by the worker
def _made(model: str, dtype: str, chain_json: str):
    from suite.core import quantized, workloads

    chain = json.loads(chain_json)
    if dtype in workloads.INTEGER_DTYPES:
        return quantized.prim_func(chain)
    if model == workloads.SEED_MODEL:
        return _seed_like(chain, dtype)
    return _fused(chain, dtype)


def _seed_like(chain: dict, dtype: str):
    """The seed's conv2d (NHWC, HWIO, accumulating in ``dtype``) at the chain's shapes."""
    from suite.compat import release

    te, topi = release.te(), release.topi()
    (step,) = chain["steps"]
    attrs = step["attrs"]
    data = te.placeholder(tuple(chain["inputs"][0]["shape"]), dtype, name="lv1")
    weight = te.placeholder(tuple(chain["inputs"][1]["shape"]), dtype, name="param_0")
    out = topi.nn.conv2d_nhwc(data, weight, attrs["strides"], attrs["padding"], attrs["dilation"], out_dtype=dtype)
    return te.create_prim_func([data, weight, out])


def _fused(chain: dict, dtype: str):
    from suite.compat import relax as compat_relax
    from suite.compat import release
    from suite.core import workloads

    relax = release.relax()
    op = relax.op
    builder = relax.BlockBuilder()
    params = [relax.Var(f"p{n}", compat_relax.tensor_type(item["shape"], dtype)) for n, item in enumerate(chain["inputs"])]
    with builder.function("main"):
        with builder.dataflow():
            done = []
            for step in chain["steps"]:
                args = [params[i] if kind == "input" else done[i] for kind, i in step["args"]]
                a = step.get("attrs", {})
                name = step["op"]
                if name == "conv2d":
                    expr = op.nn.conv2d(*args, strides=a["strides"], padding=a["padding"], dilation=a["dilation"],
                                        groups=a["groups"], data_layout=a["data_layout"],
                                        kernel_layout=a["kernel_layout"], out_dtype=dtype)
                elif name == "max_pool2d":
                    expr = op.nn.max_pool2d(*args, a["pool_size"], a["strides"], a["padding"], a["dilation"],
                                            ceil_mode=a["ceil_mode"], layout=a["layout"])
                elif name == "mean":
                    expr = op.mean(*args, axis=a["axis"], keepdims=a["keepdims"])
                else:
                    expr = {"matmul": op.matmul, "add": op.add, "relu": op.nn.relu}[name](*args)
                done.append(builder.emit(expr))
            output = builder.emit_output(done[-1])
        builder.emit_func_output(output, params)
    final = workloads.fuse(builder.get())[2]
    (func,) = [f for _, f in final.functions.items() if not compat_relax.is_relax_function(f)]
    return func


# ----------------------------------------------------------------------------- edits of a chain


def _shapes(chain: dict) -> list[tuple[int, ...]]:
    """Each step's output shape."""
    from suite.core import reference

    return [tuple(reference.output_shape({**chain, "steps": chain["steps"][:n + 1]}))
            for n in range(len(chain["steps"]))]


def _finished(chain: dict) -> dict:
    """``chain`` with its unused inputs removed, its roles (a weight's fan-in) and its output
    shape made again."""
    from suite.core import reference, workloads

    used = sorted({i for step in chain["steps"] for kind, i in step["args"] if kind == "input"})
    number = {old: new for new, old in enumerate(used)}
    steps = [{**step, "args": [["input", number[i]] if kind == "input" else [kind, i] for kind, i in step["args"]]}
             for step in chain["steps"]]
    inputs = [{"shape": list(chain["inputs"][i]["shape"])} for i in used]
    workloads.assign_roles(steps, inputs)  # the role and fan-in of each input, as the workloads' own are made
    made = {"inputs": inputs, "steps": steps}
    made["output_shape"] = list(reference.output_shape(made))
    return made


def _dropped(chain: dict, n: int) -> dict | None:
    """``chain`` without step ``n``: the last one's output is then the step before's; another's
    users read an input of its shape instead."""
    steps = chain["steps"]
    if len(steps) < 2:
        return None
    if n == len(steps) - 1:
        return _finished({**chain, "steps": steps[:-1]})
    shape = _shapes(chain)[n]
    inputs = chain["inputs"] + [{"shape": list(shape)}]
    fresh = ["input", len(inputs) - 1]

    def moved(arg):
        kind, i = arg
        if kind != "step":
            return arg
        return fresh if i == n else ["step", i - 1 if i > n else i]

    kept = [{**step, "args": [moved(a) for a in step["args"]]} for k, step in enumerate(steps) if k != n]
    return _finished({**chain, "inputs": inputs, "steps": kept})


def _sizes(chain: dict) -> dict[str, int]:
    """The sizes of ``chain`` that can be made smaller, by name: its first step's (a matmul's
    K, N and M; a conv2d's input and output channels, output height and width, and its kernel
    window, strides and dilation; another op's output axes)."""
    first = chain["steps"][0]
    shapes = [chain["inputs"][i]["shape"] for kind, i in first["args"] if kind == "input"]
    out = _shapes(chain)[0]
    if first["op"] == "matmul" and len(shapes) == 2:
        return {"K": shapes[1][0], "N": shapes[1][1], "M": shapes[0][-2]}
    if first["op"] == "conv2d" and len(shapes) == 2:
        a = first["attrs"]
        nhwc, hwio = a["data_layout"] == "NHWC", a["kernel_layout"] == "HWIO"
        c = shapes[0][3] if nhwc else shapes[0][1]
        o, h, w = (out[3], out[1], out[2]) if nhwc else (out[1], out[2], out[3])
        kh, kw = shapes[1][:2] if hwio else shapes[1][2:]
        return {"input channels": c, "output channels": o, "height": h, "width": w, "kernel height": kh,
                "kernel width": kw, "stride height": a["strides"][0], "stride width": a["strides"][1],
                "dilation height": a["dilation"][0], "dilation width": a["dilation"][1]}
    return {f"axis {n}": size for n, size in enumerate(out) if size > 1}


def _resized(chain: dict, name: str, size: int) -> dict | None:
    """``chain`` with its size ``name`` (:func:`_sizes`) made ``size``: its first step's inputs
    given new shapes, every later input that follows the data (a residual, a bias's channels)
    made to fit; None where no such chain exists (a conv2d's input would be empty)."""
    chain = copy.deepcopy(chain)
    first = chain["steps"][0]
    positions = [i for kind, i in first["args"] if kind == "input"]
    old_shapes = _shapes(chain)
    if first["op"] == "matmul" and len(positions) == 2:
        a, b = (chain["inputs"][i]["shape"] for i in positions)
        if name == "K":
            a[-1] = b[0] = size
        elif name == "N":
            b[1] = size
        else:
            a[-2] = size
    elif first["op"] == "conv2d" and len(positions) == 2:
        attrs = first["attrs"]
        nhwc = attrs["data_layout"] == "NHWC"
        data, weight = (chain["inputs"][i]["shape"] for i in positions)
        hwio = attrs["kernel_layout"] == "HWIO"
        if name == "input channels":
            data[3 if nhwc else 1] = size
            weight[2 if hwio else 1] = size
        elif name == "output channels":
            weight[3 if hwio else 0] = size
        else:  # a spatial size: the data's height or width made again for the output's
            axis = 0 if name.endswith("height") else 1
            out = old_shapes[0][(1 if nhwc else 2) + axis]
            if name in ("height", "width"):
                out = size
            elif name.startswith("kernel "):
                weight[(0 if hwio else 2) + axis] = size
            else:  # a stride or a dilation
                attrs["strides" if name.startswith("stride ") else "dilation"][axis] = size
            kernel = weight[axis] if hwio else weight[2 + axis]
            padding = attrs["padding"]
            pads = padding[axis] + padding[axis + 2] if len(padding) == 4 else 2 * padding[axis % len(padding)]
            extent = (out - 1) * attrs["strides"][axis] + (kernel - 1) * attrs["dilation"][axis] + 1 - pads
            if extent < 1:
                return None
            data[(1 if nhwc else 2) + axis] = extent
    else:
        axis = int(name.split()[1])
        for i in positions:
            shape = chain["inputs"][i]["shape"]
            if len(shape) == len(old_shapes[0]) and shape[axis] == old_shapes[0][axis]:
                shape[axis] = size
    # every later input that follows the data: an axis sized as the data's is sized as its now
    try:
        new_first = _shapes({**chain, "steps": chain["steps"][:1]})[0]
        for step in chain["steps"][1:]:
            for kind, i in step["args"]:
                shape = chain["inputs"][i]["shape"] if kind == "input" else None
                if shape is None or len(shape) != len(old_shapes[0]):
                    continue
                for axis, (old, new) in enumerate(zip(old_shapes[0], new_first)):
                    if shape[axis] == old and old > 1:
                        shape[axis] = new
        return _finished(chain)
    except (ValueError, KeyError, IndexError):  # a shape the reference refuses: no such chain
        return None


def _ladder(size: int) -> list[int]:
    """The sizes below ``size`` a size is tried at: 1, 2, 4, ... (then ``size`` itself)."""
    return [1 << k for k in range(max(size - 1, 0).bit_length()) if 1 << k < size]


def edits(chain: dict) -> Iterator[tuple[str, dict]]:
    """Each chain one stage smaller than ``chain``, in words: the last stage first."""
    for n in reversed(range(len(chain["steps"]))):
        dropped = _dropped(chain, n)
        if dropped is not None:
            yield f"{chain['steps'][n]['op']} (stage {n + 1} of {len(chain['steps'])}) dropped", dropped


# ----------------------------------------------------------------------------- traces that name blocks


def named_blocks(trace: list, func) -> list:
    """``trace`` with each block it takes from ``GetChildBlocks`` of the root block taken by its
    name instead (``GetSBlock``), where that replays to the same program on ``func``: a trace that
    finds its block by position finds none once another stage is gone. ``trace`` itself where it
    would not."""
    from suite.compat import schedules
    from suite.triage import tvmscript

    instructions, decisions = trace[0], {d[0]: d[1] for d in trace[1]}
    used = {i for ins in instructions for i in blame.flat_values(ins[1]) if isinstance(i, str)}
    roots = {ins[3][0]: (ins[0], ins[2][1]) for ins in instructions  # the root block's var: (kind, function)
             if ins[0] in ("GetSBlock", "GetBlock") and ins[2][0] == "root" and ins[3]}
    made, moved = [], {}
    try:
        for n, ins in enumerate(instructions):
            kind, inputs, _attrs, outputs = ins
            if kind == "GetChildBlocks" and len(inputs) == 1 and inputs[0] in roots:
                sch = schedules.schedule(func)
                schedules.apply_trace([instructions[:n], [[k, v] for k, v in decisions.items() if k < n]], sch)
                children = sch.get_child_blocks(schedules.get_block(sch, "root"))
                names = [sch.get(b).name_hint for b in children]
                if len(names) == len(outputs):
                    getter, function = roots[inputs[0]]
                    made += [[getter, [], [names[k], function], [o]] for k, o in enumerate(outputs) if o in used]
                    continue
            if n in decisions:
                moved[len(made)] = decisions[n]
            made.append(ins)
        named = [made, [[k, v] for k, v in sorted(moved.items())]]
        mine, theirs = schedules.schedule(func), schedules.schedule(func)
        schedules.apply_trace(named, mine)
        schedules.apply_trace(trace, theirs)
    except Exception:  # any refusal of TVM's: the trace as it was
        return trace
    same = tvmscript.script(mine.mod["main"], "main") == tvmscript.script(theirs.mod["main"], "main")
    return named if same else trace


# ----------------------------------------------------------------------------- the shrinking


@dataclass(frozen=True)
class Tried:
    """One smaller program built and judged: what was made smaller, and what it came to."""

    what: str  #: the edit in words ("add (stage 2 of 2) dropped", "K 2048 -> 16", "Fuse #3 dropped from the trace")
    outcome: Outcome
    kept: bool  #: whether it still failed as the finding did (:func:`keeps`), and was kept


@dataclass(frozen=True)
class Shrunk:
    """The smallest program found that still fails as the finding did, and what it took."""

    chain: dict  #: the small workload's op chain
    trace: list  #: its trace (made to replay on the small program, primitives dropped where it still fails)
    before: str  #: TVMScript of the small unscheduled function
    after: str  #: TVMScript of it scheduled by ``trace``
    kept: list[str]  #: the edits kept, in words, in order
    tried: list[Tried]  #: every candidate judged (each a build and run of its before and after programs)
    seconds: float
    complete: bool  #: every edit tried (not cut short by the budget)

    @property
    def lines(self) -> int:
        return lines(self.after)

    def to_json(self) -> dict:
        return {"chain": self.chain, "kept": self.kept, "lines": self.lines, "before_lines": lines(self.before),
                "instructions": len(self.trace[0]), "candidates": len(self.tried), "seconds": round(self.seconds, 1),
                "complete": self.complete,
                "tried": [{"what": t.what, "outcome": t.outcome.value, "kept": t.kept} for t in self.tried]}


#: A block's access regions (``T.reads``, ``T.writes``): TVM's parser infers them where they are not written.
_ACCESS = re.compile(r"\s*T\.(reads|writes)\(.*\)\s*")
_BLOCK_ATTRS = re.compile(r"\s*T\.sblock_attr\((.*)\)\s*")
_FUNCTION_ATTRS = re.compile(r"\s*T\.func_attr\(.*\)\s*")


def _without(script: str, pattern: re.Pattern, only=lambda found: True) -> str:
    """``script`` less the lines ``pattern`` matches whole (and ``only`` accepts)."""
    return "".join(line for line in script.splitlines(keepends=True)
                   if not ((found := pattern.fullmatch(line.rstrip("\n"))) and only(found)))


def _scheduling_notes(found: re.Match) -> bool:
    """Whether a block's annotations are all MetaSchedule's own (``meta_schedule.tiling_structure``...)."""
    try:
        notes = ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError):
        return False
    return isinstance(notes, dict) and all(str(key).startswith("meta_schedule.") for key in notes)


#: A block's spatial axis of extent 1 (``v_i0 = T.axis.spatial(T.int64(1), i0_2 + i0_3)``): always 0.
_UNIT_AXIS = re.compile(r"(\s*)(\w+) = T\.axis\.spatial\((1|T\.int(?:32|64)\(1\)), .*\)\s*")


def _unit_axes_bound(script: str) -> str:
    """``script`` with each block's spatial axes of extent 1 left out, 0 written for them in the
    block (a block needs no axis its extent-1 loops bind)."""
    lines, made, bound = script.splitlines(keepends=True), [], []  # bound: (indent, name, zero) in force
    for line in lines:
        indent = len(line) - len(line.lstrip())
        bound = [b for b in bound if indent >= b[0]]
        found = _UNIT_AXIS.fullmatch(line.rstrip("\n"))
        if found:
            zero = "0" if found.group(3) == "1" else found.group(3).replace("(1)", "(0)")
            bound.append((len(found.group(1)), found.group(2), zero))
            continue
        for _, name, zero in bound:
            line = re.sub(rf"\b{re.escape(name)}\b", zero, line)
        made.append(line)
    return "".join(made)


def _parsed(script: str):
    from suite.compat import release

    return release.tvm().script.from_source(script)


def tidied(script: str) -> str:
    """``script`` (TVMScript of a PrimFunc, as the suite prints it) less its blocks' ``T.reads``
    and ``T.writes``, where TVM's parser infers the same regions from the rest: the same program
    (structurally equal, checked here), in fewer lines. ``script`` as it is where it would not be."""
    from suite.triage import tvmscript

    lean = _without(script, _ACCESS)
    if lean == script:
        return script
    try:
        same = tvmscript.same_program(_parsed(script), _parsed(lean))
    except Exception:  # any refusal of TVM's parser: the script as printed
        return script
    return lean if same else script


#: What :func:`bare` leaves out, in words (a reproducer's ``kept``).
BARE = "function attributes, MetaSchedule's block annotations and spatial axes of extent 1 left out"


def bare(script: str) -> str | None:
    """Another program than ``script``, to be judged: its function attributes (``T.func_attr``),
    the block annotations only MetaSchedule reads and its blocks' spatial axes of extent 1 left
    out, printed again by TVM and :func:`tidied`. None where there are none, or TVM's parser
    refuses what is left."""
    from suite.triage import tvmscript

    lean = _unit_axes_bound(_without(_without(script, _FUNCTION_ATTRS), _BLOCK_ATTRS, _scheduling_notes))
    if lean == script:
        return None
    try:
        return tidied(tvmscript.script(_parsed(lean), "main"))
    except Exception:  # any refusal of TVM's parser
        return None


def lines(script: str) -> int:
    """The lines of a TVMScript program, less blank lines and comments (the printer's imports)."""
    return sum(1 for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def shrink(original, dtype: str, trace: list, outcome: Outcome, message: str, judge: Judge, tries: int) -> Shrunk:
    """The smallest program of ``original`` (a workload) scheduled by ``trace`` (the minimised one)
    found that still fails as the finding (``outcome``, ``message``) did: stages dropped, then
    sizes made smaller (:func:`edits`, :func:`_sizes`), then each primitive of the trace dropped
    in turn on it; each candidate built and judged by ``judge(chain, trace)``, at most ``tries`` of them."""
    from suite.compat import schedules
    from suite.core import workloads
    from suite.triage import tvmscript

    started = time.monotonic()
    chain, kept, tried = original.chain, [], []
    trace = named_blocks(trace, workloads.prim_func(original, dtype))
    seen, cut = set(), False

    def fails(what: str, candidate: dict, candidate_trace: list) -> bool:
        again, again_message = judge(candidate, candidate_trace)
        tried.append(Tried(what, again, keeps(outcome, message, again, again_message)))
        return tried[-1].kept

    def attempt(what: str, candidate: dict | None) -> list | None:
        """The trace made to replay on ``candidate`` where it is judged failing, else None (a
        candidate that does not replay, or keeps no primitive, is not built)."""
        nonlocal cut
        if candidate is None:
            return None
        small = prim_func(workload(original, candidate), dtype)
        repaired = blame.replayable(small)(trace)
        key = json.dumps([candidate, repaired])
        if repaired is None or not blame.primitive_positions(repaired) or key in seen:
            return None
        seen.add(key)
        if len(tried) >= tries:
            cut = True
            return None
        return repaired if fails(what, candidate, repaired) else None

    changed = True
    while changed and not cut:  # stages: each edit that keeps the failure, until none does
        changed = False
        for words, candidate in edits(chain):
            found = attempt(words, candidate)
            if found is not None:
                chain, trace, changed = candidate, found, True
                kept.append(words)
                break
    for name in _sizes(chain) if not cut else ():
        size = _sizes(chain).get(name)
        if size is None:
            continue
        ladder = _ladder(size)
        low, high = -1, len(ladder)  # ladder[high] fails (the size as it is), ladder[low] does not
        best = None
        while high - low > 1 and not cut:
            middle = 0 if low == -1 else (low + high) // 2  # 1 first: most sizes go to 1, in one candidate
            words = f"{name} {size} -> {ladder[middle]}"
            found = attempt(words, _resized(chain, name, ladder[middle]))
            if found is not None:
                high, best = middle, (words, _resized(chain, name, ladder[middle]), found)
            else:
                low = middle
        if best is not None:
            words, chain, trace = best
            kept.append(words)
    # a trace 1-minimal on the workload need not be on the small program: a primitive more may go
    replays, changed, before = blame.replayable(prim_func(workload(original, chain), dtype)), True, len(trace[0])
    needed = set()  # the primitives whose drop was judged and did not keep the failure: not tried again
    while changed and not cut:
        changed = False
        for n in reversed(blame.primitive_positions(trace)):
            if json.dumps(trace[0][n]) in needed:
                continue
            candidate = replays(blame.drop(trace, [n]))
            candidate = None if candidate is None else blame.unused_lookups_dropped(candidate)
            key = json.dumps([chain, candidate])
            if candidate is None or not blame.primitive_positions(candidate) or key in seen:
                continue
            seen.add(key)
            if len(tried) >= tries:
                cut = True
                break
            if fails(f"{trace[0][n][0]} #{n} dropped from the trace", chain, candidate):
                trace, changed = candidate, True
                break
            needed.add(json.dumps(trace[0][n]))
    if len(trace[0]) < before:
        kept.append(f"trace {before} -> {len(trace[0])} instructions")
    small = prim_func(workload(original, chain), dtype)
    sch = schedules.schedule(small)
    schedules.apply_trace(trace, sch)
    return Shrunk(chain, trace, tidied(tvmscript.script(small, "main")), tidied(tvmscript.script(sch.mod["main"], "main")),
                  kept, tried, time.monotonic() - started, not cut)


def shape_words(chain: dict) -> str:
    """The chain in words: its ops and its shapes."""
    ops = "+".join(step["op"] for step in chain["steps"])
    shapes = ", ".join("x".join(map(str, item["shape"])) for item in chain["inputs"])
    return f"{ops} of {shapes} -> {'x'.join(map(str, chain['output_shape']))} ({math.prod(chain['output_shape']):,} outputs)"


@dataclass(frozen=True)
class Reproducer:
    """A finding's small program as its directory keeps it, with what it cost and what the triage
    command on it printed (None: not run, a crash)."""

    shrunk: Shrunk
    builds: int  #: builds made (the small before and after programs of each candidate)
    command: str
    printed: str | None
    command_seconds: float  #: the command's run (a triage, or two where triage's inputs do not show it)

    def to_json(self) -> dict:
        return {**self.shrunk.to_json(), "builds": self.builds, "command": self.command, "printed": self.printed,
                "command_seconds": round(self.command_seconds, 1)}


def report_words(found: Reproducer | None) -> str:
    """The lines of a finding's report.md on its small program ("" where none was made)."""
    if found is None:
        return ""
    shrunk = found.shrunk
    how = "; ".join(shrunk.kept) if shrunk.kept else "nothing could go"
    words = [f"## Reproducer: {shrunk.lines} lines", "",
             f"The workload made small while it still fails ({how}): {shape_words(shrunk.chain)}, scheduled by "
             f"{len(shrunk.trace[0])} instructions. Found in {len(shrunk.tried)} candidates ({found.builds} builds, "
             f"{shrunk.seconds:.0f} s), each built and judged again as the campaign judges"
             + (" (cut short by the budget)." if not shrunk.complete else "."), "",
             "```sh", found.command, "```", ""]
    if found.printed is not None:
        words += ["What it printed, run here when the finding was kept:", "", "```", found.printed, "```", ""]
    words += [f"reproducer_after.py ({shrunk.lines} lines of TVMScript, blank lines and comments not counted):", "",
              "```python", shrunk.after.rstrip(), "```", "",
              f"reproducer_before.py ({lines(shrunk.before)} lines), the function before scheduling:", "",
              "```python", shrunk.before.rstrip(), "```", ""]
    return "\n".join(words)
