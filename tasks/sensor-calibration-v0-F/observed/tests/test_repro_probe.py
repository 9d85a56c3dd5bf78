from thermolog.probe import to_celsius

def test_room_temperature_reads_about_25(observe):
    observe.compare(20, '<', to_celsius(930), '<', 30)
