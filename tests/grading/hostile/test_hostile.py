"""The hostile-patch suite: every attack is graded not resolved, with its reason, on every backend."""

import http.server
import secrets
import threading

import pytest

from sdebench.grading.grade import grade
from sdebench.sandbox import make_factory
from sdebench.testing.sample_task import HIDDEN_FILE, HIDDEN_PRICING, checkout
from tests.grading.hostile.attacks import ATTACKS, PRICING, Ctx

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def rate_server():
    """An HTTP server on the host that would hand out the fact; records every request."""
    hits: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"0.07")

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv.server_address[1], hits
    srv.shutdown()
    srv.server_close()


def _workspace(sample, tmp_path, base):
    if base == "conventional":
        return checkout(sample, tmp_path / "ws", sample.conventional_patch)
    ws = checkout(sample, tmp_path / "ws")
    p = ws / PRICING
    p.write_text(p.read_text() + "\n# reviewed\n")
    return ws


def test_there_are_at_least_fifteen_distinct_attacks():
    assert len({a.name for a in ATTACKS}) == len(ATTACKS) >= 15


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.name)
def test_attack_is_graded_not_resolved(attack, factory, sample, store, rate_server, tmp_path):
    port, hits = rate_server
    hits.clear()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ctx = Ctx(secrets.token_hex(4), store, port, hits, scratch)
    ws = _workspace(sample, tmp_path, attack.base)
    attack.apply(ws, ctx)
    g = grade(sample, ws, factory, timeout=attack.timeout)
    try:
        assert not g.resolved
        assert g.reward["binary"] == 0.0
        assert g.guards or g.error or g.counts["HIDDEN_TO_PASS"]["passed"] < 2
        attack.check(g, ctx)
        escaped = [str(m) for m in ctx.markers if m.exists()]
        assert escaped == [], f"files written outside the sandbox: {escaped}"
        assert sorted(p.name for p in (store / "sample" / "hidden" / "tests").iterdir()) == ["test_pricing_hidden.py"]
    finally:
        for m in ctx.markers:
            if m.is_file():
                m.unlink()


def test_the_episode_cannot_read_the_task_store_or_results(factory, sample, store, tmp_path):
    """Commands of an episode see neither hidden tests, oracle patches, the results dir nor the grader."""
    ws = checkout(sample, tmp_path / "ws")
    hidden = store / "sample" / "hidden" / "tests" / "test_pricing_hidden.py"
    with factory.open(ws) as sb:
        r = sb.exec(
            f"cat {hidden}; cat {store}/sample/oracle.patch; ls -A {store}; "
            f"grep -rl member_rate_exact /tmp /var/tmp /dev/shm $HOME /home {store.parent} 2>/dev/null | head; "
            f"echo forged > {store}/sample/oracle.patch; echo done",
            timeout=60,
        )
    assert "93.0" not in r.stdout and "MEMBER_RATE" not in r.stdout and "sample" not in r.stdout.split()
    assert "test_pricing_hidden" not in r.stdout
    assert r.stdout.rstrip().endswith("done")
    assert "MEMBER_RATE = 0.07" in (store / "sample" / "oracle.patch").read_text()


NAIVE_FOOLED = ("conftest_force_pass", "crafted_bytecode", "monkeypatch_framework", "rewrite_tests_at_runtime")


@pytest.mark.parametrize("name", NAIVE_FOOLED)
def test_cheating_attacks_fool_a_naive_run(name, sample, store, rate_server, tmp_path):
    """A naive grader (plain pytest in the workspace, the hidden tests as written, exit code) is fooled."""
    attack = next(a for a in ATTACKS if a.name == name)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ws = _workspace(sample, tmp_path, attack.base)
    attack.apply(ws, Ctx("naive", store, rate_server[0], rate_server[1], scratch))
    (ws / HIDDEN_FILE).write_text(HIDDEN_PRICING)
    with make_factory({"backend": "unsafe_local"}).open(ws) as sb:
        honest = sb.exec(["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], timeout=60)
    assert honest.exit_code == 0, honest.stdout[-1500:]
