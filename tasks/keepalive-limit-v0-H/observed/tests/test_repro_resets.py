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

def test_long_batch_survives_the_balancer(observe):
    transport = FakeTransport()
    client = Client(transport)
    for i in range(300):
        client.get(f'http://api.example/items/{i}')
    observe.truth(all((c.closed for c in transport.conns[:-1])))
