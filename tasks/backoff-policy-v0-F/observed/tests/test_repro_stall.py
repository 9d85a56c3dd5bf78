from hookrelay.backoff import delay

def test_late_retries_do_not_stall(observe):
    observe.compare(delay(10), '<=', 60)
