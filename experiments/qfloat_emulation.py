"""Emulation speed of the executed qfloat target, and bit identity between two builds of the suite.

    python experiments/qfloat_emulation.py build DIR [--workloads W,..] [--orders O,..] [--target T]
    python experiments/qfloat_emulation.py run DIR [--only LABEL] [--faces qfloat,ieee]
    python experiments/qfloat_emulation.py compare DIR_A DIR_B

``build`` schedules and builds every combination (float16) with the code of the suite it runs
from and writes, per combination, the linked ELF and the harness's stdin for both faces of the
model (qfloat, IEEE twin), plus ``manifest.json``; it ends with the rewrite's census over them (how
often each case of suite/targets/hvx_rewrite.py occurred: packets rewritten, results loaded after
their packet, endloop splits, ``.cur`` preloads, early and late ``.new`` stores, ``.new`` reads,
packets refused). ``run`` emulates them one after the other under
qemu-hexagon, nothing cached, prints per combination the guest-measured seconds of the kernel
call, the emulator's CPU seconds and the packets, instructions and HVX instructions it executed
(those of the program TVM emitted), and keeps the outputs in ``DIR/outputs``. ``compare`` checks
two directories' outputs bit for bit (every combination, both faces) and says how many elements.

To compare two versions of the suite: ``build`` from a worktree of each into two directories,
then ``run`` both (paired, e.g. by a command timer) and ``compare`` them; ``run`` only needs the
directory, so one checkout runs both.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from suite import cache, outputs
from suite.errors import UserError

#: Who wrote a manifest.json (its mark: a build or a run replaces only what a build of it wrote).
WRITER = "experiments/qfloat_emulation.py"
FACES = ("qfloat", "ieee")
#: The rewrite's statistics (kernel.rewrite.json, suite.targets.hvx_toolchain.build_qfloat_elf) totalled by build.
CENSUS = ("with_hvx_fp", "packets", "instructions", "loads_after", "endloop_splits", "preloads", "early_stores",
          "late_stores", "new_reads")


def _build(args) -> int:
    from suite.core import schedules, tuning_records, workloads
    from suite.core.combo import Combo
    from suite.targets import hexagon, hvx_asm

    out = outputs.check_dir(Path(args.dir).resolve(), "DIR", WRITER, "manifest.json", ("*/*.in",))
    manifest, census, refused = {}, dict.fromkeys(CENSUS, 0), []
    cache.write_json(out / "manifest.json", outputs.marked({"builds": manifest}, WRITER))  # the mark first
    names = args.workloads.split(",") if args.workloads else workloads.default_ids()
    for workload_id in names:
        for order in args.orders.split(","):
            combo = Combo.resolve(workload_id, "float16", args.target, order)
            label = "-".join((workload_id, order))
            where = out / label
            where.mkdir(exist_ok=True)
            records = combo.target.records_from
            if order == "tuned":
                found = tuning_records.records_target(records, "float16", workload_id)
                if found is None:
                    print(f"{label}: no tuning record, skipped")
                    continue
                records = (found,)
            started = time.perf_counter()
            func = schedules.apply(workloads.prim_func(combo.workload, "float16"), order, workload_id,
                                   "float16", records)
            try:
                combo.target.build(combo.target.prepare(func, order), where / "kernel.o")
            except hvx_asm.RewriteError as err:
                refused.append(f"{label}: {err}")
                print(f"{label}: refused: {err}")
                continue
            inputs = workloads.make_inputs(combo.workload, "float16")
            for face in FACES:
                stdin = hexagon.encode_inputs(inputs, combo.workload.output_shape, "float16", face == "ieee")
                cache.write_file(where / f"{face}.in", lambda tmp, data=stdin: Path(tmp).write_bytes(data))
            stats = json.loads((where / "kernel.rewrite.json").read_text())
            manifest[label] = {"shape": list(combo.workload.output_shape), "dtype": "float16",
                               "arch": combo.target.arch, "rewritten": stats.get("instructions", 0)}
            print(f"{label}: built in {time.perf_counter() - started:.1f} s, "
                  f"{manifest[label]['rewritten']} rewritten instructions")
            census["with_hvx_fp"] += bool(stats.get("instructions"))
            for key in CENSUS[1:]:
                census[key] += stats.get(key, 0)
    cache.write_json(out / "manifest.json", outputs.marked({"builds": manifest}, WRITER))
    print(f"census of {len(manifest)} builds ({census['with_hvx_fp']} with HVX floating point): "
          f"{census['packets']:,} rewritten packets ({census['instructions']:,} instructions); "
          f"{census['loads_after']:,} results loaded after their packet, {census['endloop_splits']:,} of them "
          f"through an endloop split; {census['preloads']:,} .cur preloads; {census['early_stores']:,} early and "
          f"{census['late_stores']:,} late .new stores; {census['new_reads']:,} .new reads; "
          f"{len(refused)} refused{''.join(chr(10) + '  refused: ' + line for line in refused)}")
    return 0


def _run(args) -> int:
    from suite.targets import hexagon

    where = outputs.check_dir(Path(args.dir).resolve(), "DIR", WRITER, "manifest.json", ("outputs/*.npy",))
    manifest = json.loads((where / "manifest.json").read_text())["builds"]
    faces = args.faces.split(",")
    totals = {face: [0.0, 0.0] for face in faces}
    for label, item in manifest.items():
        if args.only and label not in args.only.split(","):
            continue
        for face in faces:
            run = hexagon.emulate(where / label / "kernel.elf", (where / label / f"{face}.in").read_bytes(),
                                  item["shape"], item["dtype"], ("qemu-hexagon", "-cpu", item["arch"]),
                                  timeout_s=3600)
            cache.write_array(where / "outputs" / f"{label}.{face}.npy", run.output)
            totals[face][0] += run.emulated_s
            totals[face][1] += run.cpu_s
            digest = hashlib.sha256(run.output.tobytes()).hexdigest()[:12]
            counted = ", ".join(f"{run.counts[key]:,} {key.replace('_', ' ')}" for key in hexagon.COUNTS)
            print(f"{label} {face}: kernel {run.emulated_s:.3f} s, emulator CPU {run.cpu_s:.3f} s, {counted}, "
                  f"output {digest}", flush=True)
    for face, (kernel_s, cpu_s) in totals.items():
        print(f"total {face}: kernel {kernel_s:.2f} s, emulator CPU {cpu_s:.2f} s")
    return 0


def _compare(args) -> int:
    a, b = Path(args.dir_a) / "outputs", Path(args.dir_b) / "outputs"
    names = sorted(p.name for p in a.glob("*.npy"))
    if names != sorted(p.name for p in b.glob("*.npy")):
        print("the two directories hold different combinations", file=sys.stderr)
        return 1
    differing, elements = [], 0
    for name in names:
        left, right = np.load(a / name), np.load(b / name)
        elements += left.size
        if left.shape != right.shape or left.tobytes() != right.tobytes():
            differing.append(name)
    print(f"{len(names)} outputs ({len(names) // len(FACES) if names else 0} combinations x faces), "
          f"{elements} elements compared bit for bit: {len(differing)} differ")
    for name in differing:
        print(f"  differs: {name}")
    return 1 if differing else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build")
    build.add_argument("dir")
    build.add_argument("--workloads", help="comma-separated workload ids (default: the seed and every ResNet-50 PrimFunc)")
    build.add_argument("--orders", default="tuned")
    build.add_argument("--target", default="hexagon-v68-qf")
    run = commands.add_parser("run")
    run.add_argument("dir")
    run.add_argument("--only", help="comma-separated combination labels")
    run.add_argument("--faces", default=",".join(FACES))
    compare = commands.add_parser("compare")
    compare.add_argument("dir_a")
    compare.add_argument("dir_b")
    args = parser.parse_args(argv)
    try:
        return {"build": _build, "run": _run, "compare": _compare}[args.command](args)
    except UserError as err:  # a DIR refused: one line
        print(f"qfloat_emulation.py: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
