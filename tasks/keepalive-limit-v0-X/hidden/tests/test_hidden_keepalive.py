from httpkit.client import Client

class Conn:

    def __init__(self, host):
        self.host = host
        self.served = 0
        self.closed = False
        self.sent = 0

    def close(self):
        self.closed = True

class FakeTransport:
    """A balancer that resets any connection past 250 requests."""

    def __init__(self):
        self.conns = []

    def connect(self, host):
        conn = Conn(host)
        self.conns.append(conn)
        return conn

    def send(self, conn, method, path):
        if conn.closed:
            raise RuntimeError('request on a closed connection')
        conn.sent += 1
        if conn.sent > 250:
            raise ConnectionResetError('connection reset by peer')
        return (200, method, path)
RUNS = {}

def run(count):
    """The transport after a batch of `count` GETs (one batch per size, shared by the tests)."""
    if count not in RUNS:
        transport = FakeTransport()
        client = Client(transport)
        for i in range(count):
            client.get(f'http://api.example/items/{i}')
        RUNS[count] = transport
    return RUNS[count]

def test_hidden_requests_per_connection(observe):
    observe([c.sent for c in run(599).conns])

def test_hidden_retired_connections_are_closed(observe):
    observe([c.closed for c in run(599).conns])

def test_hidden_connections_opened_for_a_batch(observe):
    observe(len(run(599).conns))
