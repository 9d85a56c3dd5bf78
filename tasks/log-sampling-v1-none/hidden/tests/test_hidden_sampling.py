from tracehub.shipping import Forwarder
from tracehub.buffer.throttle import DEBUG_KEEP_ONE_IN

def debug(i, logger='app.db'):
    return {'level': 'DEBUG', 'logger': logger, 'seq': i}

def test_hidden_exact_volume(observe):
    sink = []
    Forwarder(sink).emit_all((debug(i) for i in range(1000)))
    observe(len(sink))

def test_hidden_which_records_survive(observe):
    sink = []
    Forwarder(sink).emit_all((debug(i) for i in range(1100)))
    observe([r['seq'] for r in sink])

def test_hidden_loggers_are_sampled_separately(observe):
    sink = []
    shipper = Forwarder(sink)
    shipper.emit_all((debug(i, 'a') for i in range(1100)))
    shipper.emit(debug(0, 'b'))
    observe(len(sink))

def test_hidden_setting(observe):
    observe(DEBUG_KEEP_ONE_IN)
