"""keepalive-limit: an HTTP client reuses a pooled connection until the server resets it.

The connection pool retires a connection after it has served MAX_REQUESTS_PER_CONNECTION
requests, staying under the load balancer's per-connection limit. HEAD has no limit, so long
batches die with connection resets. The repro only needs some limit below the balancer's hard
250, which the conventional 100 also gives; the real limit is a non-round count drawn per
variant, and hidden tests count exactly how many requests each connection of a batch serves. Exploration-heavy:
the pool is one module of a package padded with filler (size knob: `GENERATOR.build_sized`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sdebench.generation.facts import draw_integer, integer_space
from sdebench.generation.family import Family
from sdebench.generation.kit import FillerVocab, Story
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.sized import SizedStory

FAMILY = "keepalive-limit"
SERVER_LIMIT = 250
CONVENTIONAL = 100
REPRO_BATCH = 300  # past the balancer's limit, so HEAD (no limit) fails
SIZES = {0: "default", 1: "default"}
ROUND = (100, 50, 64, 128, 200, 250, 120, 150, 75, 32, 256)

# The subpackage (among filler ones) that holds the rule module, per shape.
HOMES = {0: "transport", 1: "net"}


@dataclass(frozen=True)
class Shape:
    """Names that differ between variants."""

    package: str
    rule_module: str
    client: str
    vocab: FillerVocab


SHAPES = {
    0: Shape("httpkit", "pool", "Client", FillerVocab(
        "httpkit", ("request", "header", "cookie", "route", "proxy", "cert"),
        ("elapsed_ms", "body_bytes", "status_code", "redirects"), ("host", "method", "scheme", "user_agent"),
        ("cookies", "proxies", "auth", "retries_cfg", "tracing", "codecs", "tls", "mocks"))),
    1: Shape("fetchpool", "connections", "Session", FillerVocab(
        "fetchpool", ("call", "endpoint", "credential", "mirror", "download", "chunk"),
        ("duration_ms", "size_bytes", "http_status", "hops"), ("origin", "verb", "region", "client_name"),
        ("endpoints", "mirrors", "credentials", "downloads", "throttling", "telemetry", "caching", "fixtures"))),
}


def drawable(n: int) -> bool:
    """Whether the draw may return `n`: not a multiple of 5, more than 3 away from round counts."""
    return bool(n % 5) and all(abs(n - r) > 3 for r in ROUND)


def fact_limit(variant: int) -> int:
    """Requests per connection: 41..239, drawable."""
    return draw_integer(f"{FAMILY}-limit-{variant}", 41, 239, drawable)


# Round counts first, then every count of 36..244 (the draw's range and its neighbours).
SPACE = integer_space(ROUND, 41, 239, drawable, margin=5)


def tokens(n: int) -> tuple[str, ...]:
    """Every spelling that would reveal the limit."""
    return (str(n), f"{n} requests", f"{n}th", f"{n}st", f"{n}nd", f"{n}rd")


def rule_module(limit: str, stats: bool) -> str:
    """The pool; `stats` is the refactor's per-host statistics (HEAD shape)."""
    stat_init = "        self.opened_per_host = {}\n" if stats else ""
    stat_inc = "            self.opened_per_host[host] = self.opened_per_host.get(host, 0) + 1\n" if stats else ""
    return f'''"""A keep-alive connection pool: one reusable connection per host."""

# Requests one connection may serve before it is closed and replaced (None: no limit).
MAX_REQUESTS_PER_CONNECTION = {limit}


class Pool:
    """Hands out a live connection per host, opening a new one when needed."""

    def __init__(self, connect, max_requests=None):
        self.connect = connect
        self.max_requests = MAX_REQUESTS_PER_CONNECTION if max_requests is None else max_requests
        self._conns = {{}}
        self.opened = 0
{stat_init}
    def _worn_out(self, conn):
        return self.max_requests is not None and conn.served >= self.max_requests

    def acquire(self, host):
        """The connection to use for the next request to `host`."""
        conn = self._conns.get(host)
        if conn is None or conn.closed or self._worn_out(conn):
            if conn is not None and not conn.closed:
                conn.close()
            conn = self.connect(host)
            self._conns[host] = conn
            self.opened += 1
{stat_inc}        conn.served += 1
        return conn
'''


def client_module(s: Shape, dotted: str) -> str:
    """The public client: sends requests over pooled connections."""
    return f'''"""HTTP-ish client over a pluggable transport."""

from urllib.parse import urlsplit

from {dotted} import Pool


class {s.client}:
    """Sends requests through `transport` (connect(host) and send(conn, method, path))."""

    def __init__(self, transport):
        self.transport = transport
        self.pool = Pool(transport.connect)

    def request(self, method, url):
        """Send one request and return the transport's response."""
        parts = urlsplit(url)
        conn = self.pool.acquire(parts.netloc)
        return self.transport.send(conn, method, parts.path or "/")

    def get(self, url):
        """Send a GET."""
        return self.request("GET", url)
'''


def fake_transport() -> str:
    """Test double of a server behind a balancer that resets busy connections."""
    return f'''

class Conn:
    def __init__(self, host):
        self.host = host
        self.served = 0
        self.closed = False
        self.sent = 0

    def close(self):
        self.closed = True


class FakeTransport:
    """A balancer that resets any connection past {SERVER_LIMIT} requests."""

    def __init__(self):
        self.conns = []

    def connect(self, host):
        conn = Conn(host)
        self.conns.append(conn)
        return conn

    def send(self, conn, method, path):
        if conn.closed:
            raise RuntimeError("request on a closed connection")
        conn.sent += 1
        if conn.sent > {SERVER_LIMIT}:
            raise ConnectionResetError("connection reset by peer")
        return (200, method, path)
'''


def story(variant: int, n: int) -> Story:
    """The story of one variant whose limit is `n`, without its filler (see SIZED)."""
    s = SHAPES[variant % 2]
    pkg, mod, dotted = SIZED.layout(variant, s.rule_module)
    imp = f"from {pkg}.client import {s.client}\n"
    fake = fake_transport()
    base_tests = f'''{imp}{fake}

def test_get_returns_response():
    assert {s.client}(FakeTransport()).get("http://api.example/items") == (200, "GET", "/items")


def test_connection_is_reused():
    transport = FakeTransport()
    client = {s.client}(transport)
    for _ in range(20):
        client.get("http://api.example/x")
    assert len(transport.conns) == 1


def test_one_connection_per_host():
    transport = FakeTransport()
    client = {s.client}(transport)
    client.get("http://a.example/")
    client.get("http://b.example/")
    assert [c.host for c in transport.conns] == ["a.example", "b.example"]
'''
    repro = f'''{imp}{fake}

def test_long_batch_survives_the_balancer():
    # Reported: long batches die with ConnectionResetError after a few hundred calls.
    transport = FakeTransport()
    client = {s.client}(transport)
    for i in range({REPRO_BATCH}):
        client.get(f"http://api.example/items/{{i}}")
    assert all(c.closed for c in transport.conns[:-1])
'''
    # Held-out checks run one batch whose size singles out no limit (longer than any limit the
    # balancer allows), shared by the tests of the module; the expected per-connection counts
    # (right of each assert) are recorded from the oracle, not kept in the test.
    batch = 599
    sent = [n] * (batch // n) + ([batch % n] if batch % n else [])
    hidden = f'''{imp}{fake}

RUNS = {{}}


def run(count):
    """The transport after a batch of `count` GETs (one batch per size, shared by the tests)."""
    if count not in RUNS:
        transport = FakeTransport()
        client = {s.client}(transport)
        for i in range(count):
            client.get(f"http://api.example/items/{{i}}")
        RUNS[count] = transport
    return RUNS[count]


def test_hidden_requests_per_connection():
    assert [c.sent for c in run({batch}).conns] == {sent!r}


def test_hidden_retired_connections_are_closed():
    assert [c.closed for c in run({batch}).conns] == {[True] * (len(sent) - 1) + [False]!r}


def test_hidden_connections_opened_for_a_batch():
    assert len(run({batch}).conns) == {len(sent)}
'''
    return Story(
        package=pkg,
        module=mod,
        **rule_versions(lambda limit, later: rule_module(limit, stats=later), str(n), "None",
                        str(CONVENTIONAL)),
        base_files=package_files(pkg, f"{pkg}: a small HTTP client with connection reuse.",
                                 f"# {pkg}\n\nAn HTTP client with keep-alive connection pooling.\n",
                                 {f"{pkg}/client.py": client_module(s, dotted),
                                  "tests/test_client.py": base_tests}),
        repro_tests={"tests/test_repro_resets.py": repro},
        hidden_tests={"tests/test_hidden_keepalive.py": hidden},
        tags=("http", "connection-pool", "magic-number", "large-repo"),
        **prose(f"""
        -- statement
        Long-running batch jobs crash with ConnectionResetError (connection reset by peer) after a few hundred
        calls to the same service; short jobs are fine. tests/test_repro_resets.py reproduces it with a fake
        transport. Please make the client survive long batches.
        -- fact
        A pooled connection serves at most {n} requests (MAX_REQUESTS_PER_CONNECTION = {n}).
        -- conventional_guess
        MAX_REQUESTS_PER_CONNECTION = {CONVENTIONAL}
        -- intro_msg_fact
        {s.rule_module}: recycle connections after {n} requests

        Stays under the balancer's per-connection limit with margin; {n} is the platform team's number.
        -- intro_msg_plain
        {s.rule_module}: keep-alive connection pool
        -- refactor_msg
        {s.rule_module}: per-host open counts; simplify defaults
        -- K docs/adr/0005-connection-pooling.md
        Recycling: a pooled connection serves at most {n} requests (MAX_REQUESTS_PER_CONNECTION = {n}), then
        is closed and replaced. This stays under the balancer's limit with margin for retries while keeping
        handshakes rare; it supersedes ADR-0003.
        -- F
        - (review of #702, platform) Connections are recycled after {n} requests, the number the platform team
        gave us; not 100, the handshake cost shows up in latency.
        -- X
        ## Resets in the uploader's HTTP pool
        Symptom: the sibling uploader hit ConnectionResetError on long runs. Fix: its pool never recycled
        connections; set MAX_REQUESTS_PER_CONNECTION = {n}, the platform value.
        -- docs/adr/0005-connection-pooling.md
        # ADR-0005: Connection pooling

        Status: Accepted

        Each client owns its pool and reuses one live connection per host; a connection that fails is dropped
        and never handed out again.
        -- docs/adr/0003-keepalive.md
        # ADR-0003: Keep-alive reuse

        Status: Superseded

        Recycle a pooled connection every {CONVENTIONAL} requests. Superseded: the handshakes cost too much.
        -- docs/adr/0004-timeouts.md
        # ADR-0004: Timeouts

        Status: Accepted

        Connect timeout 3 s, read timeout 30 s; no request is retried after a read timeout.
        -- docs/CONVENTIONS.md
        - The balancer in front of every service resets a connection after {SERVER_LIMIT} requests; clients
        must recycle before that, with margin.
        -- docs/CONVENTIONS.md
        - Transports are injected; tests never open sockets.
        -- .agent/preferences.md
        - (review of #655) One pool per client, one live connection per host.
        -- .agent/preferences.md
        - (review of #688) Close replaced connections explicitly; don't rely on GC.
        -- .agent/past_fixes.md
        ## Wrong Host header behind the proxy
        Symptom: 404s through the proxy. Fix: keep the port in the netloc used as pool key.
        """),
    )


SIZED = SizedStory.shaped(FAMILY, story, SHAPES, HOMES, sizes=SIZES, avoid=lambda v: tokens(fact_limit(v)),
                          tokens=lambda v, n: tokens(n))
GENERATOR = Family(FAMILY, "exploration-heavy", "how many requests an HTTP client sends over one pooled "
                   "keep-alive connection (a non-round count)", variants=(0, 1), draw=fact_limit,
                   tell=SIZED.tell, tell_sized=SIZED.tell_sized, space=SPACE)
