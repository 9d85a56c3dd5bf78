"""Every module of the package imports cleanly."""
import importlib
import pkgutil
import fetchpool

def test_every_module_imports(observe):
    names = [m.name for m in pkgutil.walk_packages(fetchpool.__path__, 'fetchpool.')]
    observe.truth(names)
    for name in names:
        importlib.import_module(name)
