"""The HTML report: escaping, links, embedded plots, and a real headless Chromium render."""

from __future__ import annotations

import base64
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
from sdebench.analysis import report
from sdebench.runs import results
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


def write_episode(results_dir: Path, key: str, resolved: bool) -> EpisodeRecord:
    ident = Identity("t-K", "f", 0, "K", "b", "oracle", "a", "m", 0)
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


@pytest.mark.chromium
@pytest.mark.slow
@needs_chromium
def test_chromium_renders_the_report(small_sweep, tmp_path):
    index = report.build([small_sweep], tmp_path / "rep")
    dom, console = run_chromium(index.as_uri(), "--dump-dom")
    assert console == []
    p = parse(dom)
    assert "sdebench report" in "".join(p.text) and len(re.findall(r"<table", dom)) >= 7
    eps = [h for h in p.hrefs if h.startswith("episodes/")]
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
    shot = tmp_path / "shot.png"
    _, console = run_chromium(index.as_uri(), f"--screenshot={shot}", "--window-size=1200,2000")
    import matplotlib.image

    pix = matplotlib.image.imread(shot)
    assert console == [] and pix.shape[0] >= 1000 and pix[..., :3].std() > 0.05


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
    return html.split(f"<h2>{title}", 1)[1].split("<h2>", 1)[0]


def test_report_opens_with_the_headline_and_explains_empty_gaps(tmp_path):
    res = tmp_path / "results"
    write_episode(res, "k1", True)
    write_episode(res, "k2", False)
    html = report.build([res], tmp_path / "rep").read_text()
    first = html.split("<h2>", 2)[1]
    assert first.startswith("Headline: resolve@1 per cell")
    assert html.index("Headline") < html.index("<img") and html.index("Ablation gaps") < html.index("<img")
    # one oracle cell, 1 of 2 resolved at the first submit: the interval is in the headline
    assert "1/2 = 0.50 [0.09, 0.91]" in first
    gaps = section(html, "Ablation gaps")
    assert "no rows" not in gaps and "needs `delivery=oracle` runs" in gaps and "deliveries here: oracle" in gaps
    assert "Paired comparisons of deliveries" in html
    needed = section(html, "How many tasks an effect needs")
    assert "sqrt(q - d^2)" in needed and "<td>391</td>" in needed  # p0 = 0.5, d = 0.1


def test_the_report_counts_errored_episodes_apart(tmp_path):

    res = tmp_path / "results"
    write_episode(res, "k1", True)
    rec = write_episode(res, "k2", False)
    errored = rec.updated(key="k3", stop_reason="error", error="sandbox failed", interventions=0)
    results.write_record(results.record_path(res, Identity("t-K", "f", 0, "K", "b", "oracle", "a", "m", 0), "k3"), errored)
    html = report.build([res], tmp_path / "rep").read_text()
    assert "3 episodes from" in html and "1 ended in error: counted in the errors columns" in html
    head = section(html, "Headline")
    # the headline shows the errors column, and resolve@1 stays 1 of the 2 valid episodes, not 1 of 3
    assert "<th>errors</th>" in head and "1/2 = 0.50 [0.09, 0.91]" in head and "1/3" not in head
    assert "<th>errors</th>" in section(html, "Resolve rate and costs by source x delivery")
