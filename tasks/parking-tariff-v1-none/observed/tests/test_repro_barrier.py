from parkmeter.barrier import charge

def test_a_started_hour_counts_in_full(observe):
    observe.compare(charge(60), '<', charge(61), '==', charge(120))
