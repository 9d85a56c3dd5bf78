"""The HTML report: escaping, links, embedded plots, and a real headless Chromium render."""

from __future__ import annotations

import base64
import html
import os
import re
import shutil
import subprocess
import sys
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from sdebench.agents.trajectory import Trajectory
from sdebench.analysis import htmltable, matrix, report
from sdebench.runs import provenance, results
from sdebench.runs.record import Attempt, EpisodeRecord, Identity

ROOT = Path(__file__).resolve().parents[2]
EVIL = "<script>alert('x')</script>&<b>"


class Links(HTMLParser):
    """Collects href and src attributes and the text of a page."""

    def __init__(self):
        super().__init__()
        self.hrefs, self.srcs, self.text, self.scripts = [], [], [], 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if "href" in a:
            self.hrefs.append(a["href"])
        if "src" in a:
            self.srcs.append(a["src"])

    def handle_data(self, data):
        self.text.append(data)


def parse(text: str) -> Links:
    p = Links()
    p.feed(text)
    return p


def write_episode(results_dir: Path, key: str, resolved: bool, **ident_fields) -> EpisodeRecord:
    ident = Identity(**{**vars(Identity("t-K", "f", 0, "K", "b", "oracle", "a", "m", 0)), **ident_fields})
    path = results.record_path(results_dir, ident, key)
    tr = Trajectory(results.trajectory_path(path))
    tr.log("tool", name="bash", arguments={"cmd": EVIL}, output=f"out {EVIL}", error=False)
    tr.log("message", role="assistant", content=f"thinking {EVIL}")
    tr.log("model_call", turn=1, cost_usd=0.01, message={"role": "assistant", "content": f"plan {EVIL}",
           "tool_calls": [{"function": {"name": "bash", "arguments": f'{{"cmd": "{EVIL}"}}'}}]})
    tr.log("grade", resolved=resolved, tests=[{"id": "t::x", "group": "HIDDEN_TO_PASS", "outcome": "failed",
                                              "message": EVIL}], feedback=f"feedback {EVIL}")
    attempt = Attempt(1, "submitted", 1, resolved, {}, 1.0 if resolved else 0.0, [], None, 0.1)
    rec = EpisodeRecord.from_flat(dict(**vars(ident), key=key, resolved=resolved, interventions=0 if resolved else 5,
                                       stop_reason="resolved" if resolved else "max_interventions", final_diff=f"+ {EVIL}",
                                       attempts=[attempt], turns=1, tool_calls={"bash": 1},
                                       trajectory="/nonexistent/moved.jsonl"))
    results.write_record(path, rec)
    return rec


def test_pages_escape_everything_and_link_up(tmp_path):
    res = tmp_path / "results"
    write_episode(res, "k1", True)
    write_episode(res, "k2", False)
    index = report.build([res], tmp_path / "rep")
    html = index.read_text()
    assert EVIL not in html and parse(html).scripts == 0
    links = [h for h in parse(html).hrefs if h.startswith("episodes/")]
    assert sorted(links) == ["episodes/k1.html", "episodes/k2.html"]
    for link in links:
        ep = (index.parent / link).read_text()
        p = parse(ep)
        assert EVIL not in ep and p.scripts == 0
        text = "".join(p.text)
        # the trajectory was found beside the record though its stored path is stale
        for part in (f"out {EVIL}", f"thinking {EVIL}", f"plan {EVIL}", f'-> bash({{"cmd": "{EVIL}"}})', f"feedback {EVIL}", f"+ {EVIL}"):
            assert part in text
        assert "../index.html" in p.hrefs


def test_cli_rejects_a_missing_dir_in_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-m", "sdebench.report", str(tmp_path / "nope")], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such results dir" in r.stderr


@pytest.mark.slow
def test_report_of_a_real_sweep(small_sweep, tmp_path):
    r = subprocess.run([sys.executable, "-m", "sdebench.report", str(small_sweep), "--out", str(tmp_path / "rep")],
                       capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 0, r.stderr
    index = tmp_path / "rep" / "index.html"
    p = parse(index.read_text())
    eps = [h for h in p.hrefs if h.startswith("episodes/")]
    assert len(eps) == len(results.read_records(small_sweep)) == 12
    assert all((index.parent / h).is_file() for h in eps)
    pngs = [s for s in p.srcs if s.startswith("data:image/png;base64,")]
    assert len(pngs) == len(p.srcs) == 7
    assert all(base64.b64decode(s.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n" for s in pngs)
    # the run noted what produced it: the sweep's command, the commit of this code, its config
    meta = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", index.read_text()))
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    assert meta["episodes"] == "12" and meta["errors"].startswith("0 ")
    assert meta["command"].startswith("sdebench run -m delivery=squashed,oracle source=K,H")
    # (a checkout edited while the sweep ran shows both states, one per job that saw it)
    assert re.fullmatch(rf"({head[:12]} \((clean|uncommitted changes)\)(; )?)+ \(sdebench \S+\)", meta["code"]), meta
    agents = re.search(r"agent\.name in \{(.*?)\}", meta["config"]).group(1)
    assert set(agents.split(", ")) == {"oracle", "conventional", "noop"} and "select.family=billing-rounding" in meta["config"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ( to \S+)?", meta["started"])
    conv = next(h for h in eps if "conventional" in (index.parent / h).read_text())
    text = "".join(parse((index.parent / conv).read_text()).text)
    assert text.count("HIDDEN_TO_PASS") >= 6 and "max_interventions" in text and "edit_file" in text


# --- headless Chromium ---------------------------------------------------------------------------

def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


needs_chromium = pytest.mark.skipif(chromium() is None and os.environ.get("CI") != "true",
                                    reason="chromium not installed (required when CI=true)")


def run_chromium(url: str, *extra: str) -> tuple[str, list[str]]:
    """Load `url` in a fresh headless Chromium; return the rendered DOM and the page's console lines."""
    exe = chromium()
    assert exe, "chromium is required when CI=true (apt-get install chromium)"
    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                            "--disable-component-update", "--disable-sync", "--no-first-run",
                            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", *extra, url],
                           capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    console = [line for line in r.stderr.splitlines() if ":CONSOLE" in line]
    return r.stdout, console


@pytest.mark.chromium
@needs_chromium
def test_console_check_catches_a_page_error(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><script>console.error("marker-42")</script></body></html>')
    _, console = run_chromium(bad.as_uri(), "--dump-dom")
    assert any("marker-42" in line for line in console)


# A page that shows the report in a frame of a given size and measures it there (the report itself
# carries no script): the page's width and scroll width, the first heading after the run metadata,
# where the matrix starts and how many table boxes scroll sideways. Headless Chromium's window is at
# least 500 px wide, so a phone's 390 px is a frame's width.
PROBE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body style="margin:0">
<iframe id="f" src="index.html" width="{w}" height="{h}" style="border:0;display:block"></iframe><pre id="probe"></pre>
<script>
const f = document.getElementById("f");
f.addEventListener("load", () => {{
  const d = f.contentDocument, heads = [...d.querySelectorAll("h1,h2,h3,h4,h5,h6,dl.meta")];
  const next = heads[heads.indexOf(d.querySelector("dl.meta")) + 1];
  const boxes = [...d.querySelectorAll(".scroll")];
  document.getElementById("probe").textContent = JSON.stringify({{
    width: f.contentWindow.innerWidth, scrollWidth: d.documentElement.scrollWidth, next: next && next.id,
    matrixTop: d.getElementById("matrix").getBoundingClientRect().top,
    matrixTables: d.querySelectorAll("table.matrix").length,
    wideMatrices: boxes.filter(b => b.querySelector("table.matrix") && b.scrollWidth > b.clientWidth + 1).length,
    wideBoxes: boxes.filter(b => b.scrollWidth > b.clientWidth + 1).length,
    title: d.querySelector("h1").textContent, tables: d.querySelectorAll("table").length,
    episodes: [...d.querySelectorAll("a[href^='episodes/']")].map(a => a.getAttribute("href"))}});
}});
</script></body></html>"""
SCREENS = {"desktop": (1400, 900), "phone": (390, 844)}


def measure(index: Path, width: int, height: int, shot: Path) -> dict:
    """The probe's figures for `index` shown `width` x `height`, and a screenshot of that view in `shot`."""
    import json

    from PIL import Image

    probe = index.parent / f"probe-{width}.html"
    probe.write_text(PROBE.format(w=width, h=height))
    window = f"--window-size={max(width, 500)},{height + 100}"
    dom, console = run_chromium(probe.as_uri(), "--allow-file-access-from-files", window, f"--screenshot={shot}",
                                "--dump-dom")
    assert console == []
    found = re.search(r'<pre id="probe">(.*?)</pre>', dom)
    assert found and found.group(1), dom[-2000:]
    with Image.open(shot) as im:
        im.crop((0, 0, width, height)).save(shot)
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.chromium
@pytest.mark.slow
@needs_chromium
def test_chromium_renders_the_report(small_sweep, tmp_path):
    index = report.build([small_sweep], tmp_path / "rep")
    # the first screen: run metadata, then the matrices; no sideways page overflow at either width
    artifacts = Path(os.environ["SDEBENCH_ARTIFACTS"]) / "report" if os.environ.get("SDEBENCH_ARTIFACTS") else None
    import matplotlib.image

    seen_at = {}
    for name, (width, height) in SCREENS.items():
        shot = tmp_path / f"report-{name}-{width}.png"
        m = seen_at[name] = measure(index, width, height, shot)
        pix = matplotlib.image.imread(shot)
        assert pix.shape[:2] == (height, width) and pix[..., :3].std() > 0.05, name
        if artifacts is not None:
            artifacts.mkdir(parents=True, exist_ok=True)
            shutil.copy(shot, artifacts / shot.name)
        assert m["width"] == width and m["scrollWidth"] <= width, (name, m)
        assert m["next"] == "matrix" and m["matrixTables"] == 3, (name, m)  # one per reference agent
        if name == "desktop":
            assert m["matrixTop"] < height / 2 and m["wideMatrices"] == 0, m
        else:  # wide tables scroll inside their own box, not the page
            assert m["wideBoxes"] >= 1, m
    m = seen_at["desktop"]
    assert m["title"] == "sdebench report" and m["tables"] >= 7
    eps = m["episodes"]
    assert len(eps) == 12
    # every link resolves; one page per agent is rendered in the browser and links back
    for h in eps:
        assert (index.parent / h).is_file(), h
    seen = set()
    for h in eps:
        page = (index.parent / h).read_text()
        agent = re.search(r"<td>agent</td><td>(\w+)</td>", page).group(1)
        if agent in seen:
            continue
        seen.add(agent)
        edom, econsole = run_chromium((index.parent / h).resolve().as_uri(), "--dump-dom")
        assert econsole == [] and "Trajectory" in edom and "grade" in edom
        back = [x for x in parse(edom).hrefs if x.endswith("index.html")]
        assert back and all((index.parent / "episodes" / x).resolve() == index.resolve() for x in back)
    assert seen == {"oracle", "conventional", "noop"}


def test_stream_episodes_are_tabled_apart(tmp_path):

    res = tmp_path / "results"
    write_episode(res, "k1", True)
    rec = write_episode(res, "k2", False)
    stream_rec = rec.updated(key="k3", stream_id="rounding-both-0", stream_position=1)
    results.write_record(results.record_path(res, Identity("t-K", "f", 0, "K", "b", "oracle", "a", "m", 0), "k3"),
                         stream_rec)
    html = report.build([res], tmp_path / "rep").read_text()
    assert "1 of them stream episodes" in html
    # the static cell counts 2 episodes, the stream table 1: never 3 pooled
    cells = section(html, "Resolve rate and costs by source x delivery")
    assert "<td>2</td>" in cells and "<td>3</td>" not in cells
    assert "<td>1</td>" in section(html, "Stream episodes")


def section(html: str, title: str) -> str:
    """The HTML between the heading that starts with `title` and the next heading."""
    return re.split(rf"<h2[^>]*>{re.escape(title)}", html, maxsplit=1)[1].split("<h2", 1)[0]


def test_report_opens_with_run_metadata_then_the_matrix_and_explains_empty_gaps(tmp_path):
    res = tmp_path / "results"
    write_episode(res, "k1", True)
    write_episode(res, "k2", False)
    page = report.build([res], tmp_path / "rep").read_text()
    # nothing noted what produced these records: unknown, not a crash
    meta = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", page))
    assert meta["episodes"] == "2" and meta["errors"].startswith("0 ")
    assert meta["command"] == meta["code"] == meta["config"] == meta["started"] == "unknown"
    assert page.index("</dl>") < page.index("<h2") and page.split("<h2", 2)[1].startswith(' id="matrix"')
    first = section(page, matrix.TITLE)
    assert page.index(matrix.TITLE) < page.index("<img") and page.index("Ablation gaps") < page.index("<img")
    # one oracle cell, 1 of 2 resolved at the first submit: k/n = p [Wilson interval], as every table says it
    cell = re.search(r'<table class="matrix">.*?</table>', first).group(0)
    assert "".join(parse(cell).text) == "resolve@1oracleK1/2 = 0.50 [0.09, 0.91]"
    assert "mean cost per episode: $0.0000 in every cell" in first and "mean cost</th>" not in first
    gaps = section(page, "Ablation gaps")
    assert "no rows" not in gaps and "needs `delivery=oracle` runs" in gaps and "deliveries here: oracle" in gaps
    assert "Paired comparisons of deliveries" in page
    needed = section(page, "How many tasks an effect needs")
    assert "sqrt(q - d^2)" in needed and "<td>391</td>" in needed  # p0 = 0.5, d = 0.1


def test_the_report_shows_the_runs_noted_provenance(tmp_path, monkeypatch):
    res = tmp_path / "results"
    write_episode(res, "k1", True)
    monkeypatch.setenv(provenance.COMMAND_ENV, "sdebench run agent=a")
    cfg = {"agent": {"name": "a"}, "delivery": {"name": "oracle"}, "seed": 0}
    provenance.note_job(cfg, res)
    provenance.note_job({**cfg, "seed": 1}, res)
    meta = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", report.build([res], tmp_path / "rep").read_text()))
    state = provenance.code_state()
    assert meta["command"] == "sdebench run agent=a"
    assert meta["code"].startswith(state["commit"][:12] if state["commit"] else "unknown")
    assert meta["config"].startswith("2 configs, one per job") and "agent.name=a" in meta["config"]
    assert "seed in {0, 1}" in meta["config"]


def test_each_tier_has_its_own_matrix(tmp_path):
    res = tmp_path / "results"
    write_episode(res, "k1", True)
    write_episode(res, "k2", False, task_id="t-hard-K", competency="conflict")
    first = section(report.build([res], tmp_path / "rep").read_text(), matrix.TITLE)
    heads = re.findall(r"<h3>(.*?)(?: <span.*?)?</h3>", first)
    assert heads == ["agent=a model=m tier=recall", "agent=a model=m tier=hard"]
    cells = ["".join(parse(t).text) for t in re.findall(r'<table class="matrix">.*?</table>', first)]
    assert cells == ["resolve@1oracleK1/1 = 1.00 [0.21, 1.00]", "resolve@1oracleK0/1 = 0.00 [0.00, 0.79]"]


def test_the_cost_matrix_has_the_shape_of_the_resolve_matrix(tmp_path):
    res = tmp_path / "results"
    for key, delivery, cost in (("k1", "oracle", 0.01), ("k2", "squashed", 0.03), ("k3", "squashed", 0.05)):
        rec = write_episode(res, key, True, delivery=delivery)
        results.write_record(results.record_path(res, rec.identity, key), rec.updated(cost_usd=cost))
    first = section(report.build([res], tmp_path / "rep").read_text(), matrix.TITLE)
    resolve, cost = ["".join(parse(t).text) for t in re.findall(r'<table class="matrix">.*?</table>', first)]
    assert resolve == "resolve@1squashedoracleK2/2 = 1.00 [0.34, 1.00]1/1 = 1.00 [0.21, 1.00]"
    assert cost == "mean costsquashedoracleK$0.0400$0.0100"


def test_constant_columns_are_named_in_a_caption():
    import pandas as pd

    df = pd.DataFrame({"task": ["t1", "t1"], "model": ["m", "m"], "x": [1.0, 2.0], "blank": [None, None]})
    out = htmltable.table(df, fold=True)
    assert "<th>x</th>" in out and "<th>model</th>" not in out and "<th>blank</th>" not in out
    assert "<caption>Same in every row: task=t1, model=m. Empty in every row: blank.</caption>" in out
    # a linked first column stays, and one row folds nothing
    assert "<th>task</th>" in htmltable.table(df, links={0: "a.html"}, fold=True)
    assert "<caption>" not in htmltable.table(df.head(1), fold=True)


def test_the_report_counts_errored_episodes_apart(tmp_path):

    res = tmp_path / "results"
    write_episode(res, "k1", True)
    rec = write_episode(res, "k2", False)
    errored = rec.updated(key="k3", stop_reason="error", error="sandbox failed", interventions=0)
    results.write_record(results.record_path(res, Identity("t-K", "f", 0, "K", "b", "oracle", "a", "m", 0), "k3"), errored)
    html = report.build([res], tmp_path / "rep").read_text()
    meta = dict(re.findall(r"<dt>(.*?)</dt><dd>(.*?)</dd>", html))
    assert meta["episodes"] == "3" and meta["errors"].startswith("1 (no outcome")
    # the matrix cell counts the errored episode beside resolve@1 of the 2 valid ones
    assert '1/2 = 0.50 <span class="ci">[0.09, 0.91]</span> <span class="err">+1 error</span>' in html
    head = section(html, "Every cell")
    # the headline shows the errors column, and resolve@1 stays 1 of the 2 valid episodes, not 1 of 3
    assert "<th>errors</th>" in head and "1/2 = 0.50 [0.09, 0.91]" in head and "1/3" not in head
    assert "<th>errors</th>" in section(html, "Resolve rate and costs by source x delivery")
