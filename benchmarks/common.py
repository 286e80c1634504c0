"""The one base of the benchmarks: parameters, timeout, the skip policy and the tracked metrics.

The parameter grid comes from the environment (``TVM_SUITE_WORKLOADS``, ``TVM_SUITE_DTYPES``,
``TVM_SUITE_TARGETS``, ``TVM_SUITE_ORDERS``: see ``suite.core.combo.Grid``), which asv passes to
its benchmark processes. Every benchmark class reads one measured combination in ``setup`` and
turns its record into asv's outcome with ``suite.core.record.outcome``: skipped -> NaN, failed ->
null. Its ``track_*`` methods come from ``suite.tracked``, where each metric is declared once.
"""

import gc
import importlib
import sys

#: Why each module safe_import could not import (shown in the skip reasons).
IMPORT_ERRORS = {}


def safe_import(name):
    """Import a suite module, or None when it (or TVM behind it) cannot be imported here."""
    try:
        return importlib.import_module(name)
    except Exception as err:  # the suite must import on any TVM, or none
        text = str(err).strip()
        IMPORT_ERRORS[name] = f"{type(err).__name__}: {text.splitlines()[0] if text else ''}"
        return None


def not_imported() -> NotImplementedError:
    """The skip of a benchmark whose suite modules could not be imported, with the reason."""
    reasons = "; ".join(f"{name}: {why}" for name, why in IMPORT_ERRORS.items())
    return NotImplementedError(f"the suite could not be imported ({reasons or 'unknown'})")


children = safe_import("suite.children")
entries = safe_import("suite.core.entries")
tracked = safe_import("suite.tracked")
combo = safe_import("suite.core.combo")
record = safe_import("suite.core.record")
measurement = safe_import("suite.core.measurement")
errors = safe_import("suite.errors")
runstore = safe_import("suite.core.runstore")
run_place = safe_import("suite.core.run_place")
model_grid = safe_import("suite.model.grid")
model_results = safe_import("suite.model.results")
SUITE = None not in (children, entries, tracked, combo, record, measurement, errors, runstore, run_place, model_grid,
                     model_results)

if SUITE:
    # asv imports this module in its benchmark server (launch_method forkserver), whose parent is
    # asv: the server, and each benchmark it forks (see setup), end when their parent does.
    children.die_with_parent()
    GRID = combo.Grid.from_env()
    PARAMS = GRID.params()
    PARAM_NAMES = combo.PARAM_NAMES
    try:
        MODEL_GRID = model_grid.ModelGrid.from_env()
    except errors.UserError as err:  # a bad TVM_SUITE_MODEL* value: said by each model benchmark's skip
        MODEL_GRID, MODEL_GRID_ERROR = None, str(err)
else:
    GRID = MODEL_GRID = None
    PARAMS = [["seed.conv2d_nhwc_7x7s2"], ["float32"], ["llvm"], ["default"]]
    PARAM_NAMES = ["workload", "dtype", "target", "order"]
MODEL_PARAMS = MODEL_GRID.params() if MODEL_GRID is not None else [["miniresnet"], ["float32"], ["llvm"], ["default"]]


def _preloaded() -> tuple[dict, bool]:
    """In asv's benchmark server (launch_method forkserver) inside a run (`tvm-suite run` or
    `history`, whose measure phase has filled the cache): every combination of the grid resolved
    and its cached record read once, here, and whether the run has kept its TVM build note. The
    server imports this module once and forks every benchmark process from it (about 1,200 in a
    quick run): they share what is read here instead of each resolving its combination, reading its
    record and looking for the build note again. ({}, False) anywhere else (asv's discovery, a
    spawned process, asv outside a run): each process does it all itself."""
    if not SUITE or sys.argv[1:2] != ["run_server"]:
        return {}, False
    try:
        place = run_place.current()
        if place is None:
            return {}, False
        found = {c.ids: (c, entries.cached(c)) for c in GRID.combos()}  # None: not cached, measured by its process
        noted = runstore.read_own(place, run_place.BUILD, bytes) is not None
    except Exception:  # noqa: BLE001 - each benchmark process meets it again and fails as its own
        return {}, False
    gc.freeze()  # the forked processes' collections leave the server's objects alone (fewer pages copied)
    return found, noted


def _share_with_forks() -> None:
    """In asv's benchmark server (launch_method forkserver): what every forked benchmark process
    would otherwise work out again, done once here, before the forks, so that they inherit it.

    - asv_runner builds the benchmark's object in each process, and reads and tokenizes its source
      for its ``code`` and version fingerprint (with numpy.ma, a third of the forks' CPU in a quick
      run: 4.5 of about 1,200 processes' 14 CPU-s): both are kept here (the sources do not change
      while asv runs), and the server's own discovery of the benchmarks, before any fork, fills them;
    - ``numpy.median`` (every latency benchmark's) imports ``numpy.ma`` on its first call (7 ms)."""
    if sys.argv[1:2] != ["run_server"]:
        return
    import functools
    import inspect

    import numpy.ma  # noqa: F401 - imported for the forks

    try:
        from asv_runner.benchmarks import _base
    except ImportError:
        return
    source, fingerprint = getattr(_base, "get_source_code", None), getattr(_base, "code_fingerprint", None)
    if source is None or fingerprint is None:  # another asv_runner: each process works them out itself
        return
    kept = {}

    def get_source_code(items):
        # by function: asv_runner binds each benchmark's methods to an instance of its own
        key = tuple((getattr(item, "__func__", item), inspect.ismethod(item)) for item in items)
        if key not in kept:
            kept[key] = source(items)
        return kept[key]

    _base.get_source_code = get_source_code
    _base.code_fingerprint = functools.lru_cache(maxsize=None)(fingerprint)


_share_with_forks()
#: combination ids -> (the combination, its cached record or None); whether the build note is kept
PRELOADED, BUILD_NOTED = _preloaded()


def _track(metric):
    def track(self, *params):
        return float(self.values[metric.name])

    track.__name__ = track.__qualname__ = metric.method
    track.__doc__ = metric.doc
    track.unit = metric.unit
    return track


class ComboBenchmark:
    """A measured combination; subclasses say what they need (``need``) and, where it is not the
    record's own values, what they read (``read``)."""

    params = PARAMS
    param_names = PARAM_NAMES
    #: The first process of a combination builds it: scalar fp16 Hexagon builds of tuned schedules
    #: take minutes of LLVM codegen, an emulated run of the seed conv2d minutes of QEMU.
    timeout = 3600
    #: Explicit, so that refactoring the benchmark code keeps asv's history; bump it when what a
    #: benchmark measures changes meaning.
    version = "2"
    need = "RECORD"
    against_default = False  #: compares with the default order: default itself is left out
    #: The dtypes whose combinations the class reads, by their name in suite.core.workloads
    #: ("FLOAT_DTYPES": the floats, bfloat16 too; "INTEGER_DTYPES": int8); None: every dtype.
    dtypes = None
    #: What the class needs on this machine besides the grid (None: nothing): a class whose
    #: ``runs_here()`` is False has no benchmarks in this run, rather than a process per combination
    #: that could only be skipped.
    runs_here = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if GRID is not None:
            # Only the combinations that can give what the class needs: no process per combination
            # that could only be skipped (a class with none left has no benchmarks in this run).
            grid = GRID.for_need(record.Need[cls.need], cls.against_default,
                                 getattr(combo.workloads, cls.dtypes) if cls.dtypes else None)
            if grid is None or (cls.runs_here is not None and not cls.runs_here()):
                return
            cls.params = grid.params()
        if tracked is not None:
            module = cls.__module__.rsplit(".", 1)[-1]
            for metric in tracked.of_class(module, cls.__name__):
                if metric.in_asv:  # the others are kept beside asv's results (see setup)
                    setattr(cls, metric.method, _track(metric))

    def setup(self, workload, dtype, target, order):
        if not SUITE:
            raise not_imported()
        children.die_with_parent()
        self.combo, measured = PRELOADED.get((workload, dtype, target, order), (None, None))
        if self.combo is None:
            self.combo = combo.Combo.resolve(workload, dtype, target, order)
        if measured is None:
            measured = measurement.measure(self.combo)
        if not BUILD_NOTED:
            measurement.note_tvm_build()
        if measured.tuned_from:  # whose tuning record replayed, for the report
            runstore.note_records(self.combo.ids, measured.tuned_from)
        if measured.code:  # the code identity: same or changed between commits (gate, report)
            runstore.note_code(self.combo.ids, measured.code)
        try:
            self.record = record.outcome(measured, record.Need[self.need])
        except record.CombinationFailed as err:
            runstore.note_failure(self.combo.ids, str(err))  # asv keeps only a null
            raise
        try:
            self.values = self.read()
        except errors.Skipped as err:
            raise NotImplementedError(str(err)) from None
        # Every value of this class's metrics: asv's track_* values, for readers to check asv's against,
        # and the metrics asv cannot read right (suite.tracked), which readers take from here.
        module, name = type(self).__module__.rsplit(".", 1)[-1], type(self).__name__
        runstore.note_values(f"{module}.{name}", self.combo.ids,
                             {m.name: float(self.values[m.name]) for m in tracked.of_class(module, name)
                              if m.name in self.values})

    def read(self) -> dict:
        """This combination's values, each under its metric's name (suite.tracked)."""
        return self.record.values()


class ModelBenchmark:
    """A whole model's setting (model x dtype x target x order: suite.model.grid, whose
    environment contract gives the grid); every setting of a model is measured at once, by the
    first benchmark process that asks (or `run`'s measure phase), and kept in the cache. Subclasses
    say which settings have their values: ``tuned_only``, ``twin_only`` (targets with an IEEE twin),
    ``emulated_only``, ``dtypes`` (as :class:`ComboBenchmark`'s)."""

    params = MODEL_PARAMS
    param_names = ["model", "dtype", "target", "order"]
    timeout = 3600
    version = "1"
    tuned_only = twin_only = emulated_only = False
    #: The dtypes whose settings the class reads, by their name in suite.core.workloads (None: all)
    dtypes = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if MODEL_GRID is not None:
            names = [t for t in MODEL_GRID.targets
                     if not (cls.twin_only and not combo.targets.get(t).ieee_twin)
                     and not (cls.emulated_only and combo.targets.get(t).mode.value != "emulated")]
            orders = [o for o in MODEL_GRID.orders if not (cls.tuned_only and o != "tuned")]
            kept = getattr(combo.workloads, cls.dtypes) if cls.dtypes else MODEL_GRID.dtypes
            dtypes = [d for d in MODEL_GRID.dtypes if d in kept]
            if MODEL_GRID.empty or not (names and orders and dtypes):
                return  # no settings give this class's values: no benchmarks in this run
            cls.params = [MODEL_GRID.models, dtypes, names, orders]
        if tracked is not None:
            module = cls.__module__.rsplit(".", 1)[-1]
            for metric in tracked.of_class(module, cls.__name__):
                if metric.in_asv:
                    setattr(cls, metric.method, _track(metric))

    def setup(self, model, dtype, target, order):
        if not SUITE:
            raise not_imported()
        if MODEL_GRID is None:
            raise NotImplementedError(MODEL_GRID_ERROR)
        children.die_with_parent()
        ids = (model, dtype, target, order)
        found = model_grid.measure(MODEL_GRID, model).result(dtype, target, order)
        if found is None or found.status is model_results.Status.SKIPPED:
            why = found.reason if found is not None else "not in the model grid"
            runstore.note_failure(ids, f"skipped: {why}")  # asv keeps only a NaN
            raise NotImplementedError(why)
        if not found.measured:
            runstore.note_failure(ids, found.reason)
            raise record.CombinationFailed(f"{' '.join(ids)} not measured: {found.reason}")
        module, name = type(self).__module__.rsplit(".", 1)[-1], type(self).__name__
        mine = [m.name for m in tracked.of_class(module, name)]
        self.values = {k: v for k, v in model_grid.values(found).items() if k in mine}
        runstore.note_values(f"{module}.{name}", ids, self.values)
