import pytest

from stackconf.app import load_settings
from stackconf.merge import merge_layers, origin

ORDER = ('defaults', 'file', 'cli', 'env')


def settings_with(layers):
    """Load settings where each named layer sets workers to a value of its own."""
    value = {name: str(10 + i) for i, name in enumerate(ORDER)}
    defaults = {"workers": value["defaults"]} if "defaults" in layers else {}
    file_text = f"workers = {value['file']}\n" if "file" in layers else ""
    environ = {"STACK_WORKERS": value["env"]} if "env" in layers else {}
    argv = [f"--workers={value['cli']}"] if "cli" in layers else []
    return load_settings(defaults, file_text, environ, argv), value


PAIRS = [
    ("defaults", "file"),
    ("defaults", "cli"),
    ("defaults", "env"),
    ("file", "cli"),
    ("file", "env"),
    ("cli", "env"),
]


@pytest.mark.parametrize("lower,higher", PAIRS)
def test_hidden_pairwise_precedence(lower, higher):
    s, value = settings_with({lower, higher})
    assert s.get("workers") == value[higher]


def test_hidden_all_layers():
    s, value = settings_with(set(ORDER))
    assert s.get("workers") == value[ORDER[-1]]


def test_hidden_merge_helper_directly():
    layers = {name: {"k": name} for name in ORDER}
    assert merge_layers(layers)["k"] == ORDER[-1]
    assert origin(layers, "k") == ORDER[-1]
