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
        text = "\n".join(line for line in Path(path).read_text().splitlines() if not line.strip().startswith("//"))
        conf = json.loads(text)
    except (OSError, ValueError) as err:
        raise UserError(f"{path}: cannot read asv configuration ({err})") from None
    if not isinstance(conf, dict):
        raise UserError(f"{path}: an asv configuration is a JSON object")
    return conf


def run_config(results_dir: Path) -> Path | None:
    """The configuration a `tvm-suite` run wrote beside ``results_dir`` (asv.installed.json,
    asv.history.json): the one whose results_dir is this directory."""
    for path in sorted(Path(results_dir).parent.glob("asv*.json")):
        try:
            where = read_conf(path).get("results_dir")
        except UserError:
            continue
        if where and Path(where).resolve() == Path(results_dir).resolve():
            return path
    return None
