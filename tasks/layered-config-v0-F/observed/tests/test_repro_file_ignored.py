from stackconf.app import load_settings

def test_config_file_value_beats_default(observe):
    s = load_settings({'workers': 2}, 'workers = 8\n')
    observe.compare(s.get_int('workers'), '==', 8)
