"""Every module of the package imports cleanly."""
import importlib
import pkgutil
import tracehub

def test_every_module_imports(observe):
    names = [m.name for m in pkgutil.walk_packages(tracehub.__path__, 'tracehub.')]
    observe.truth(names)
    for name in names:
        importlib.import_module(name)
