from fetchpool.client import Session

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

def test_get_returns_response(observe):
    observe.compare(Session(FakeTransport()).get('http://api.example/items'), '==', (200, 'GET', '/items'))

def test_connection_is_reused(observe):
    transport = FakeTransport()
    client = Session(transport)
    for _ in range(20):
        client.get('http://api.example/x')
    observe.compare(len(transport.conns), '==', 1)

def test_one_connection_per_host(observe):
    transport = FakeTransport()
    client = Session(transport)
    client.get('http://a.example/')
    client.get('http://b.example/')
    observe.compare([c.host for c in transport.conns], '==', ['a.example', 'b.example'])
