"""Every module of the package imports cleanly."""
import importlib
import pkgutil
import batchq

def test_every_module_imports(observe):
    names = [m.name for m in pkgutil.walk_packages(batchq.__path__, 'batchq.')]
    observe.truth(names)
    for name in names:
        importlib.import_module(name)
