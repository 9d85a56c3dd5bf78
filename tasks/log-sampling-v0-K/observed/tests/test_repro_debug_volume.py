from logpipe.shipping import Shipper

def debug(i, logger='app.db'):
    return {'level': 'DEBUG', 'logger': logger, 'seq': i}

def test_debug_volume_stays_under_quota(observe):
    sink = []
    Shipper(sink).emit_all((debug(i) for i in range(1000)))
    observe.compare(0, '<', len(sink), '<', 20)
