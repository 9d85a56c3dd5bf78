"""Every module of the package imports cleanly."""
import importlib
import pkgutil
import logpipe

def test_every_module_imports(observe):
    names = [m.name for m in pkgutil.walk_packages(logpipe.__path__, 'logpipe.')]
    observe.truth(names)
    for name in names:
        importlib.import_module(name)
