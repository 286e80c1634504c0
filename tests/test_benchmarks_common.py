"""The asv side: a benchmark skipped because the suite cannot be imported says why."""

import importlib
from pathlib import Path


def test_skip_reason_names_the_import_error(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1]))
    common = importlib.import_module("benchmarks.common")
    assert common.safe_import("suite.no_such_module") is None
    reason = common.not_imported()
    assert isinstance(reason, NotImplementedError)  # asv records it as a skip
    assert str(reason).startswith("the suite could not be imported (")
    assert "suite.no_such_module: ModuleNotFoundError: No module named 'suite.no_such_module'" in str(reason)
