"""Every module of the package imports cleanly."""
import importlib
import pkgutil
import gatekeep

def test_every_module_imports(observe):
    names = [m.name for m in pkgutil.walk_packages(gatekeep.__path__, 'gatekeep.')]
    observe.truth(names)
    for name in names:
        importlib.import_module(name)
