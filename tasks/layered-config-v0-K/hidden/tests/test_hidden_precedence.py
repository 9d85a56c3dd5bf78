import pytest
from stackconf.app import load_settings
from stackconf.merge import merge_layers, origin
NAMES = ('cli', 'defaults', 'env', 'file', 'site', 'user')

def settings_with(layers):
    """Load settings where each named layer sets workers to a value of its own."""
    value = {name: str(10 + i) for i, name in enumerate(NAMES)}
    defaults = {'workers': value['defaults']} if 'defaults' in layers else {}
    file_text = f"workers = {value['file']}\n" if 'file' in layers else ''
    site_text = f"workers = {value['site']}\n" if 'site' in layers else ''
    user_text = f"workers = {value['user']}\n" if 'user' in layers else ''
    environ = {'STACK_WORKERS': value['env']} if 'env' in layers else {}
    argv = [f"--workers={value['cli']}"] if 'cli' in layers else []
    return load_settings(defaults, file_text, environ, argv, site_text, user_text)
PAIRS = [('cli', 'defaults'), ('cli', 'env'), ('cli', 'file'), ('cli', 'site'), ('cli', 'user'), ('defaults', 'env'), ('defaults', 'file'), ('defaults', 'site'), ('defaults', 'user'), ('env', 'file'), ('env', 'site'), ('env', 'user'), ('file', 'site'), ('file', 'user'), ('site', 'user')]

@pytest.mark.parametrize('first,second', PAIRS)
def test_hidden_pairwise_precedence(first, second, observe):
    observe(settings_with({first, second}).get('workers'))

def test_hidden_all_layers(observe):
    observe(settings_with(set(NAMES)).get('workers'))

def test_hidden_merge_helper_directly(observe):
    layers = {name: {'k': name} for name in NAMES}
    observe(merge_layers(layers)['k'])
    observe(origin(layers, 'k'))
