import pytest
from settingsmith.app import load_settings
from settingsmith.merge import merge_layers, origin
NAMES = ('builtin', 'environment', 'flags', 'home', 'profile', 'system')

def settings_with(layers):
    """Load settings where each named layer sets workers to a value of its own."""
    value = {name: str(10 + i) for i, name in enumerate(NAMES)}
    defaults = {'workers': value['builtin']} if 'builtin' in layers else {}
    file_text = f"workers = {value['profile']}\n" if 'profile' in layers else ''
    site_text = f"workers = {value['system']}\n" if 'system' in layers else ''
    user_text = f"workers = {value['home']}\n" if 'home' in layers else ''
    environ = {'SMITH_WORKERS': value['environment']} if 'environment' in layers else {}
    argv = [f"--workers={value['flags']}"] if 'flags' in layers else []
    return load_settings(defaults, file_text, environ, argv, site_text, user_text)
PAIRS = [('builtin', 'environment'), ('builtin', 'flags'), ('builtin', 'home'), ('builtin', 'profile'), ('builtin', 'system'), ('environment', 'flags'), ('environment', 'home'), ('environment', 'profile'), ('environment', 'system'), ('flags', 'home'), ('flags', 'profile'), ('flags', 'system'), ('home', 'profile'), ('home', 'system'), ('profile', 'system')]

@pytest.mark.parametrize('first,second', PAIRS)
def test_hidden_pairwise_precedence(first, second, observe):
    observe(settings_with({first, second}).get('workers'))

def test_hidden_all_layers(observe):
    observe(settings_with(set(NAMES)).get('workers'))

def test_hidden_merge_helper_directly(observe):
    layers = {name: {'k': name} for name in NAMES}
    observe(merge_layers(layers)['k'])
    observe(origin(layers, 'k'))
