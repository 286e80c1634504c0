"""TVMScript and schedule scripts as reports of 2022-2024 wrote them, in the installed TVM's
spelling (:func:`modernize`, :func:`modernize_schedule`): each rename applies only where the installed
TVM lacks the old name and has the new one (:func:`spelling_rules`). Part of the compat layer's half
that reads programs (:mod:`suite.triage.tvmscript`)."""

from __future__ import annotations

import re

from suite.compat import release

# What reports of 2022-2024 wrote, and what the installed TVM calls it. Each rule applies only
# where the installed TVM lacks the old name and has the new one (see spelling_rules()).

#: (regex, replacement, the name the installed T must lack, the name it must have)
_SCRIPT_RENAMES = (
    (r"\bT\.block\(", "T.sblock(", "block", "sblock"),
    (r"\bT\.block_attr\(", "T.sblock_attr(", "block_attr", "sblock_attr"),
)
_SCHEDULE_RENAMES = (
    (r"\btvm\.tir\.Schedule\b", "tvm.s_tir.Schedule"),
    (r"\btvm\.tir\.schedule\.", "tvm.s_tir.schedule."),
    (r"\btvm\.meta_schedule\b", "tvm.s_tir.meta_schedule"),
    (r"\btvm\.tir\.", "tvm.tirx."),
    (r"\.get_block\(", ".get_sblock("),
    (r"^(\s*)from tvm import tir\s*$", r"\1from tvm import tirx as tir"),
    (r"\btir\.Schedule\b", "s_tir.Schedule"),
)


def spelling_rules() -> dict:
    """Which rewrites the installed TVM needs: ``script`` (regex, replacement) pairs for
    TVMScript, ``schedule`` pairs for schedule scripts, and ``s_tir``: whether ``T.prim_func``
    takes ``s_tir=True`` (0.27: functions with blocks must say so)."""
    parser = release.tvm().script.parser.tirx
    script = [(old, new) for old, new, gone, present in _SCRIPT_RENAMES
              if not hasattr(parser, gone) and hasattr(parser, present)]
    noalias = release.tir().__name__.endswith("tirx")
    if noalias:
        script.append((r"([\"'])tir\.noalias\1", r'\1tirx.noalias\1'))
    has_sblock = hasattr(release.schedule_namespace().Schedule, "get_sblock")
    schedule = [(old, new) for old, new in _SCHEDULE_RENAMES
                if has_sblock or "sblock" not in new and "s_tir" not in new]
    return {"script": script, "schedule": schedule, "s_tir": "s_tir" in _prim_func_parameters()}


def _prim_func_parameters() -> tuple[str, ...]:
    import inspect

    return tuple(inspect.signature(release.tvm().script.parser.tirx.prim_func).parameters)


def modernize(text: str, rules: dict) -> str:
    """TVMScript of any spelling the rules know, in the installed release's, line for line (line
    numbers stay those of the file, for error messages):

    - ``T.Buffer[(shape), "dtype"]`` (2022-2023) becomes ``T.Buffer((shape), "dtype")``;
    - the renames of ``rules["script"]`` (``T.block`` -> ``T.sblock``, ``"tir.noalias"`` ->
      ``"tirx.noalias"``...);
    - ``@T.prim_func`` gains ``s_tir=True`` where ``rules["s_tir"]`` says the installed TVM needs it
      for functions with blocks (harmless for those without);
    - ``@tvm.script.ir_module`` becomes ``@I.ir_module``.
    """
    text = _subscripts_to_calls(text, r"\b(?:T|tir)\.Buffer\[")
    for old, new in rules["script"]:
        text = re.sub(old, new, text)
    text = re.sub(r"@tvm\.script\.ir_module\b", "@I.ir_module", text)
    if rules["s_tir"]:
        text = re.sub(r"@(T|tir)\.prim_func\b(?!\s*\()", r"@\1.prim_func(s_tir=True)", text)
        text = re.sub(r"@(T|tir)\.prim_func\(((?:(?!s_tir)[^)\n])*)\)",
                      lambda m: f"@{m.group(1)}.prim_func({m.group(2) + ', ' if m.group(2).strip() else ''}s_tir=True)",
                      text)
    return text


def modernize_schedule(text: str, rules: dict) -> str:
    """A schedule script (``tvm.tir.Schedule``, ``sch.get_block``...) in the installed spelling."""
    for old, new in rules["schedule"]:
        text = re.sub(old, new, text, flags=re.MULTILINE)
    return text


def _subscripts_to_calls(text: str, opening: str) -> str:
    """``X[...]`` -> ``X(...)`` for every match of ``opening`` (which ends with the ``[``)."""
    out, position = [], 0
    for match in re.finditer(opening, text):
        if match.start() < position:
            continue
        depth, end = 1, match.end()
        while end < len(text) and depth:
            depth += {"[": 1, "(": 1, "{": 1, "]": -1, ")": -1, "}": -1}.get(text[end], 0)
            end += 1
        if depth:  # unbalanced: leave it to the parser to say where
            break
        out += [text[position:match.end() - 1], "(", text[match.end():end - 1], ")"]
        position = end
    return "".join(out) + text[position:]
