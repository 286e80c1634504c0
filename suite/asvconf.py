"""The project's asv configuration: where it is, and the one reader of it (asv.conf.json has ``//``
comment lines) and of the configurations `tvm-suite run` and `history` write beside their results."""

from __future__ import annotations

import json
from pathlib import Path

from suite.errors import UserError

REPO_ROOT = Path(__file__).resolve().parents[1]
ASV_CONF = REPO_ROOT / "asv.conf.json"


def read_conf(path: Path = ASV_CONF) -> dict:
    """An asv configuration: asv.conf.json (with ``//`` comment lines) or one a run wrote."""
    try:
        text = "\n".join(line for line in Path(path).read_bytes().decode("utf-8").splitlines()
                         if not line.strip().startswith("//"))
        conf = json.loads(text)
    except (OSError, ValueError) as err:
        raise UserError(f"{path}: cannot read asv configuration ({str(err).splitlines()[0]})") from None
    if not isinstance(conf, dict):
        raise UserError(f"{path}: an asv configuration is a JSON object")
    wrong = [k for k in ("repo", "results_dir", "html_dir", "show_commit_url", "benchmark_dir")
             if k in conf and not isinstance(conf[k], str)]
    if wrong:
        raise UserError(f"{path}: asv configuration with {', '.join(wrong)} not text")
    return conf


def run_config(results_dir: Path) -> Path | None:
    """The configuration a `tvm-suite` run wrote beside ``results_dir`` (asv.installed.json,
    asv.history.json): the one whose results_dir is this directory. One that cannot be read is an
    error naming it (it says where the commits come from)."""
    for path in sorted(Path(results_dir).parent.glob("asv*.json")):
        where = read_conf(path).get("results_dir")
        if where and Path(where).resolve() == Path(results_dir).resolve():
            return path
    return None
