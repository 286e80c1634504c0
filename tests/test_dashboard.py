"""asv's published dashboard works offline: `tvm-suite run` serves the libraries asv's pages load
from CDNs out of the HTML directory (suite.asv_plumbing.dashboard), and headless Chromium, with every
host but 127.0.0.1 unreachable, draws the index, a benchmark's graph, the sorted benchmark list and
the regressions page from it. asv's page as `asv publish` writes it fails there (the control)."""

import base64
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import threading
from functools import partial
from pathlib import Path

import pytest
from asv_runs import WORKLOAD, two_commit_repo
from conftest import run_cli

from suite.asv_plumbing import dashboard, npm_assets

pytestmark = pytest.mark.slow

CHROMIUM = Path("/usr/bin/chromium")
GRAPH = "bench_latency.Throughput.track_latency_median"
#: The CDN files asv pins that npm has byte for byte; the flot files and stupidtable are served
#: from other builds, with their integrity recomputed.
SAME_BYTES = {
    "https://code.jquery.com/jquery-3.3.1.min.js",
    "https://cdn.jsdelivr.net/npm/flot-orderbars@1.0.0/js/jquery.flot.orderBars.js",
    "https://cdnjs.cloudflare.com/ajax/libs/blueimp-md5/2.19.0/js/md5.min.js",
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/js/bootstrap.min.js",
    "https://cdn.jsdelivr.net/npm/bootstrap@3.1.1/dist/css/bootstrap.min.css",
}
ASV_ERROR = "One or more external (JavaScript) dependencies of airspeed velocity failed to load"


def _run(out, repo, commit, base, assets):
    return run_cli("run", "--quick", "--workloads", WORKLOAD, "--dtypes", "float16", "--orders", "default",
                   "--out", str(out), "--tvm-repo", str(repo), "--tvm-commit", commit,
                   env={"HOME": str(base), npm_assets.ASSETS_ENV: str(assets)})


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """Two real `tvm-suite run`s on two commits: the first with no libraries at hand (its HTML kept
    as `asv publish` wrote it, in asv-html/), the second with the session's."""
    base = tmp_path_factory.mktemp("dashboard")
    repo = base / "tvm"
    commits = two_commit_repo(repo)
    out = base / "asv"
    (base / "none").mkdir()
    without = _run(out, repo, commits[0], base, base / "none")
    shutil.copytree(out / "html", base / "asv-html")
    served = _run(out, repo, commits[1], base, os.environ[npm_assets.ASSETS_ENV])
    return {"base": base, "out": out, "repo": repo, "without": without, "with": served}


@pytest.fixture(scope="module")
def libraries():
    _, problem = npm_assets.obtain(npm_assets.PACKAGES, network=False)
    if problem:
        pytest.skip(f"asv's dashboard libraries are not here ({problem}); .ci/run fetches them")
    return Path(os.environ[npm_assets.ASSETS_ENV])


def _html_line(stdout):
    return next(line for line in stdout.splitlines() if line.startswith("asv's own HTML: "))


def test_without_the_libraries_a_run_publishes_and_says_in_one_line_how_to_serve_them(published):
    result = published["without"]
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    line = _html_line(result.stdout)
    assert line.startswith(f"asv's own HTML: {published['out'] / 'html' / 'index.html'} needs a network: ")
    for package in npm_assets.PACKAGES:
        assert package.label in line
    assert f"{npm_assets.ASSETS_ENV}=DIR" in line and "--fetch-into DIR" in line
    assert "the registry is not asked" in line  # a named directory: the network is never used
    # asv.log travels with the run directory (docs/run.md): the places the libraries were looked for
    # are named there by their variables, never by a path of this machine
    from suite import cache

    log = (published["out"] / "asv.log").read_text()
    assert f"are not in ${npm_assets.ASSETS_ENV} or $TVM_SUITE_CACHE/asv-assets" in log, log
    assert str(published["base"]) not in log and str(cache.root()) not in log, log
    kept = published["base"] / "asv-html"
    assert "https://code.jquery.com/jquery-3.3.1.min.js" in (kept / "index.html").read_text()
    assert not (kept / "vendor").exists()


def _sri(data, algorithm="sha384"):
    return f"{algorithm}-{base64.b64encode(hashlib.new(algorithm, data).digest()).decode()}"


def test_a_run_serves_asv_libraries_from_the_html_directory_with_integrity_recomputed(published, libraries):
    result = published["with"]
    assert result.returncode == 0, result.stdout + result.stderr
    html = published["out"] / "html"
    assert _html_line(result.stdout) == (
        f"asv's own HTML: {html / 'index.html'} (works offline: its 10 scripts and styles come from vendor/ "
        "beside it: blueimp-md5@2.19.0, bootstrap@3.1.1, flot-orderbars@1.0.0, flot@0.8.3, jquery@3.3.1, "
        "stupid-table-plugin@1.1.3)")
    assert dashboard.check(html) == []
    page = (html / "index.html").read_text()
    assert "cdn" not in page and "code.jquery.com" not in page
    served = json.loads((html / "vendor" / "assets.json").read_text())
    assert sorted(s["url"] for s in served) == sorted(npm_assets.ASSETS)
    for s in served:
        data = (html / s["path"]).read_bytes()
        assert s["integrity"] == _sri(data) and f'integrity="{s["integrity"]}"' in page
        assert f'"{s["path"]}"' in page
        assert s["same_bytes"] == (s["url"] in SAME_BYTES), s
    # asv's pinned hash of jQuery holds for the bytes served
    jquery = (html / "vendor/jquery-3.3.1/dist/jquery.min.js").read_bytes()
    assert _sri(jquery, "sha256") == "sha256-FgpCb/KJQlLNfOu91ta32o/NMZxltwRo8QtmkMRdAu8="
    assert (html / "vendor/bootstrap-3.1.1/dist/fonts/glyphicons-halflings-regular.woff").is_file()
    assert (html / "vendor/flot-0.8.3/LICENSE.txt").is_file()


def test_a_plain_asv_publish_is_made_offline_by_the_module(published, libraries, tmp_path):
    """An asv user's `asv publish`, then `python -m suite.asv_plumbing.dashboard HTML_DIR`, with the
    packages unpacked as `npm install` lays out node_modules; without them: one line, exit 2,
    the page untouched. (The suite's asv plugin does the same step inside `asv publish`: here it
    has no packages, and says so in one line, the page as asv wrote it.)"""
    html = tmp_path / "html"
    empty = tmp_path / "empty"
    empty.mkdir()
    publish = subprocess.run([sys.executable, "-m", "asv", "--config", str(published["out"] / "asv.installed.json"),
                              "publish", "--html-dir", str(html)], capture_output=True, text=True,
                             env={**os.environ, npm_assets.ASSETS_ENV: str(empty)})
    assert publish.returncode == 0, publish.stdout + publish.stderr
    assert f"tvm-suite: {html / 'index.html'} needs a network: " in publish.stdout + publish.stderr
    asv_page = (html / "index.html").read_bytes()
    assert b"https://cdnjs.cloudflare.com/ajax/libs/flot/0.8.3/jquery.flot.min.js" in asv_page
    module = [sys.executable, "-m", "suite.asv_plumbing.dashboard", str(html)]

    missing = subprocess.run(module, capture_output=True, text=True, env={**os.environ, npm_assets.ASSETS_ENV: str(empty)})
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1 and "needs a network" in missing.stderr, missing.stderr
    assert (html / "index.html").read_bytes() == asv_page and not (html / "vendor").exists()

    modules = tmp_path / "node_modules"
    for package in npm_assets.PACKAGES:
        tarball = libraries / package.tarball
        if tarball.is_file():
            with tarfile.open(tarball) as archive:  # package/<path> -> node_modules/<name>/<path>
                for member in filter(tarfile.TarInfo.isfile, archive.getmembers()):
                    target = modules / package.name / member.name.split("/", 1)[-1]
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(archive.extractfile(member).read())
        else:
            shutil.copytree(libraries / package.name, modules / package.name)
    env = {**os.environ, npm_assets.ASSETS_ENV: str(modules)}
    made = subprocess.run(module, capture_output=True, text=True, env=env)
    assert made.returncode == 0, made.stderr
    lines = made.stdout.splitlines()
    assert sum("same bytes as" in line for line in lines) == 5 and sum(" replaces " in line for line in lines) == 5
    assert lines[-1].startswith(f"{html / 'index.html'} (works offline: its 10 scripts")
    assert dashboard.check(html) == []
    again = subprocess.run(module, capture_output=True, text=True, env=env)
    assert again.returncode == 0 and "works offline" in again.stdout, again.stderr
    # a served file that is not the bytes its integrity names is found out
    (html / "vendor/flot-0.8.3/jquery.flot.js").write_text("/* not flot */")
    assert dashboard.check(html) == [
        "index.html loads vendor/flot-0.8.3/jquery.flot.js, whose bytes are not the ones its integrity names"]


# ----------------------------------------------------------------------------- in the browser


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(published):
    """An HTTP server on 127.0.0.1 over the run's directory (asv's pages read their JSON with XHR)."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(published["base"])))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def chromium(url, profile, *extra):
    """Headless Chromium with no host but this machine reachable (a dead proxy, and no name
    resolves): the page's DOM after 10 s of virtual time, and the browser's log."""
    result = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", f"--user-data-dir={profile}",
         "--proxy-server=127.0.0.1:9", "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
         "--enable-logging=stderr", "--v=0", "--window-size=1400,900", "--virtual-time-budget=10000", *extra, url],
        capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout, result.stderr


def _values(out, benchmark):
    values = []
    for path in (out / "results").glob("*/*.json"):
        if path.name != "machine.json":
            values += json.loads(path.read_text())["results"][benchmark][0]
    return values


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium (/usr/bin/chromium)")
def test_the_dashboard_renders_in_headless_chromium_with_the_network_blocked(published, libraries, server, tmp_path):
    # the control: asv's own page cannot load its libraries here
    dom, _ = chromium(f"{server}/asv-html/index.html", tmp_path / "p0", "--dump-dom")
    assert ASV_ERROR in dom

    site = f"{server}/asv/html/index.html"
    benchmarks = json.loads((published["out"] / "html" / "index.json").read_text())["benchmarks"]
    dom, log = chromium(site, tmp_path / "p1", "--dump-dom")
    assert ASV_ERROR not in dom and "<title>airspeed velocity of an unladen tvm</title>" in dom
    # every benchmark has its box: the suite's 8 of a default order on llvm, the whole model's
    # (miniresnet, the benchmarks of llvm's default order), and PyTorch's ratios where PyTorch is installed
    assert len(re.findall(r'class="btn benchmark-container"', dom)) == len(benchmarks)
    assert len([name for name in benchmarks if not name.startswith(("bench_peer.", "bench_model."))]) == 8
    assert len([name for name in benchmarks if name.startswith("bench_model.")]) == 4
    assert re.search(r'<canvas class="flot-base"', dom)  # the grid's small graphs
    assert "integrity" not in log and "Uncaught" not in log, log[-2000:]

    # one benchmark's graph: flot draws it, its y axis labelled from the two latencies measured
    dom, log = chromium(f"{site}#{GRAPH}", tmp_path / "p2", "--dump-dom")
    assert f'id="title">{GRAPH}</span>' in dom
    main = dom[dom.index('id="main-graph"'):dom.index('id="overview"')]
    assert '<canvas class="flot-base"' in main and '<canvas class="flot-overlay"' in main
    ticks = [float(t) for t in re.findall(r'class="flot-tick-label tickLabel"[^>]*>([-0-9.e+]+)</div>', main)]
    values = _values(published["out"], GRAPH)
    assert len(values) == 2 and len(ticks) >= 3, (values, ticks)
    # the axis spans the data, labelled in the unit that fits it (asv's time axis): milliseconds,
    # or seconds where a loaded machine made the seed's latency a second or more
    assert any(min(ticks) <= min(v) and max(v) <= max(ticks) <= 2 * max(v)
               for v in ([1000 * x for x in values], values)), (values, ticks)
    assert "Uncaught" not in log, log[-2000:]

    # the benchmark list, sorted by value, descending (stupidtable)
    dom, _ = chromium(f"{site}#/summarylist?sort=1&dir=desc", tmp_path / "p3", "--dump-dom")
    header = re.search(r'<th data-sort="float" class="([^"]*)">Value</th>', dom)
    assert header and "desc" in header.group(1).split()
    keys = [float(v) for v in re.findall(r'<td class="value" data-sort-value="([^"]+)"', dom)]
    assert len(keys) == len(benchmarks) and keys == sorted(keys, reverse=True)

    # the regressions page: each row's id ends in the md5 (blueimp-md5) of what would ignore it
    dom, log = chromium(f"{site}#/regressions", tmp_path / "p4", "--dump-dom")
    body = dom[dom.index('id="regressions-body"'):]
    assert '<th data-sort="factor"' in body
    rows = re.findall(r'<tr id="asv-r-([^"]*)"', body)
    assert all(re.fullmatch(r".*[0-9a-f]{32}", row) for row in rows), rows
    assert "Uncaught" not in log, log[-2000:]

    for name, fragment in (("index", ""), ("graph", f"#{GRAPH}")):
        shot = tmp_path / f"{name}.png"
        chromium(site + fragment, tmp_path / f"s-{name}", f"--screenshot={shot}")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
