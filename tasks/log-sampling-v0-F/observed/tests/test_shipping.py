from logpipe.shipping import Shipper

def debug(i, logger='app.db'):
    return {'level': 'DEBUG', 'logger': logger, 'seq': i}

def test_errors_are_always_shipped(observe):
    sink = []
    Shipper(sink).emit_all(({'level': 'ERROR', 'logger': 'x', 'seq': i} for i in range(700)))
    observe.compare(len(sink), '==', 700)

def test_info_is_not_sampled(observe):
    sink = []
    Shipper(sink).emit_all(({'level': 'INFO', 'logger': 'x', 'seq': i} for i in range(90)))
    observe.compare(len(sink), '==', 90)

def test_first_debug_record_is_kept(observe):
    sink = []
    Shipper(sink).emit(debug(0))
    observe.compare(sink, '==', [debug(0)])

def test_dropped_are_counted(observe):
    sink = []
    shipper = Shipper(sink)
    shipper.emit_all((debug(i) for i in range(30)))
    observe.compare(shipper.dropped + len(sink), '==', 30)
