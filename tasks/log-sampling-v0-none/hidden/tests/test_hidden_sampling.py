from logpipe.shipping import Shipper
from logpipe.ingest.sampling import DEBUG_KEEP_ONE_IN


def debug(i, logger="app.db"):
    return {"level": "DEBUG", "logger": logger, "seq": i}


def test_hidden_exact_volume():
    sink = []
    Shipper(sink).emit_all(debug(i) for i in range(6000))
    assert len(sink) == 14


def test_hidden_which_records_survive():
    sink = []
    Shipper(sink).emit_all(debug(i) for i in range(917))
    assert [r["seq"] for r in sink] == [0, 458, 916]


def test_hidden_loggers_are_sampled_separately():
    sink = []
    shipper = Shipper(sink)
    shipper.emit_all(debug(i, "a") for i in range(458))
    shipper.emit(debug(0, "b"))
    assert len(sink) == 2


def test_hidden_setting():
    assert DEBUG_KEEP_ONE_IN == 458
