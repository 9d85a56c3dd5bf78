from tracehub.shipping import Forwarder
from tracehub.buffer.throttle import DEBUG_KEEP_ONE_IN


def debug(i, logger="app.db"):
    return {"level": "DEBUG", "logger": logger, "seq": i}


def test_hidden_exact_volume():
    sink = []
    Forwarder(sink).emit_all(debug(i) for i in range(6000))
    assert len(sink) == 19


def test_hidden_which_records_survive():
    sink = []
    Forwarder(sink).emit_all(debug(i) for i in range(665))
    assert [r["seq"] for r in sink] == [0, 332, 664]


def test_hidden_loggers_are_sampled_separately():
    sink = []
    shipper = Forwarder(sink)
    shipper.emit_all(debug(i, "a") for i in range(332))
    shipper.emit(debug(0, "b"))
    assert len(sink) == 2


def test_hidden_setting():
    assert DEBUG_KEEP_ONE_IN == 332
