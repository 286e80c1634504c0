"""Where the project's files are, the project's asv configuration, and the one reader of it
(asv's own: asv.conf.json has ``//`` comment lines) and of the configurations `tvm-suite run` and `history`
write beside their results.

``suite/project/`` holds the project files the suite reads at run time: asv.conf.json, the asv
benchmarks and the report's templates and thresholds. In a checkout they are links to the files at
the repository's root (where asv users and the layout expect them); a wheel copies them in, so an
installed suite (``pip install .``) finds them the same way.
"""

from __future__ import annotations

from pathlib import Path

from asv import util as asv_util

from suite.errors import UserError

SUITE_DIR = Path(__file__).resolve().parent.parent
PROJECT = SUITE_DIR / "project"
ASV_CONF = PROJECT / "asv.conf.json"
BENCHMARKS = PROJECT / "benchmarks"
REPORTS = PROJECT / "reports"
#: Where ``import suite`` finds this suite: asv's benchmark processes must import this very one.
IMPORT_ROOT = SUITE_DIR.parent
#: The source checkout this suite runs from, if any (None for an installed wheel): `tvm-suite
#: history` installs the suite from it into asv's environments.
CHECKOUT = IMPORT_ROOT if (IMPORT_ROOT / "pyproject.toml").is_file() else None


def read_conf(path: Path = ASV_CONF) -> dict:
    """An asv configuration: asv.conf.json (with ``//`` comment lines) or one a run wrote, read as asv
    reads it (``asv.util.load_json``, JSON5: comments allowed)."""
    try:
        conf = asv_util.load_json(str(path), js_comments=True)
    except (OSError, ValueError) as err:
        raise UserError(f"{path}: cannot read asv configuration ({str(err).splitlines()[0]})") from None
    except RecursionError:
        raise UserError(f"{path}: cannot read asv configuration (nested too deep)") from None
    if not isinstance(conf, dict):
        raise UserError(f"{path}: an asv configuration is a JSON object")
    wrong = [k for k in ("repo", "results_dir", "html_dir", "show_commit_url", "benchmark_dir")
             if k in conf and not isinstance(conf[k], str)]
    if wrong:
        raise UserError(f"{path}: asv configuration with {', '.join(wrong)} not text")
    return conf


def run_config(results_dir: Path) -> Path | None:
    """The configuration a `tvm-suite` run wrote beside ``results_dir`` (asv.installed.json,
    asv.history.json): the one whose results_dir is this directory (relative to the
    configuration's own directory, where asv runs); else, for the results of asv at the root of
    this checkout (``.asv/root/results``), the project's asv.conf.json (its repo: ``./tvm``). One
    that cannot be read is an error naming it (it says where the commits come from)."""
    for path in sorted(Path(results_dir).parent.glob("asv*.json")):
        where = read_conf(path).get("results_dir")
        if where and (path.parent / where).resolve() == Path(results_dir).resolve():
            return path
    if CHECKOUT is not None and (CHECKOUT / "asv.conf.json").is_file():
        where = read_conf(CHECKOUT / "asv.conf.json").get("results_dir")
        if where and (CHECKOUT / where).resolve() == Path(results_dir).resolve():
            return CHECKOUT / "asv.conf.json"
    return None


def repo_of(config: Path) -> Path | None:
    """The repository a run's configuration names (relative to the configuration's directory)."""
    repo = read_conf(config).get("repo")
    return (Path(config).parent / repo) if repo else None
