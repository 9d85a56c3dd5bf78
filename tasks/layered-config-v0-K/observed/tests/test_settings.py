import pytest
from stackconf.app import load_settings
from stackconf.merge import merge_layers
from stackconf.sources import parse_env, parse_file

def test_parse_file_sections_and_comments(observe):
    text = '# main\nname = demo\n[db]\nhost = db.local  # primary\n'
    observe.compare(parse_file(text), '==', {'name': 'demo', 'db.host': 'db.local'})

def test_parse_file_rejects_garbage(observe):
    with observe.raises():
        parse_file('just words')

def test_parse_env_prefix(observe):
    observe.compare(parse_env({'STACK_DB__PORT': '6', 'HOME': '/root'}), '==', {'db.port': '6'})

def test_defaults_alone(observe):
    s = load_settings({'workers': 3, 'debug': 'no'})
    observe.compare(s.get_int('workers'), '==', 3)
    observe.compare(s.get_bool('debug'), 'is', False)

def test_unknown_layer_rejected(observe):
    with observe.raises():
        merge_layers({'nonsense': {}})

def test_keys_from_different_layers_combine(observe):
    s = load_settings({'workers': 3}, '[db]\nhost = h1\n', {'STACK_LOG': 'info'}, ['--mode=fast'])
    observe.compare((s.get_int('workers'), s.get('db.host'), s.get('log'), s.get('mode')), '==', (3, 'h1', 'info', 'fast'))
