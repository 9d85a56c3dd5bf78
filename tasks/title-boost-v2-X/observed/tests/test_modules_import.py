"""Every module of the package imports cleanly."""
import importlib
import pkgutil
import docsearch

def test_every_module_imports(observe):
    names = [m.name for m in pkgutil.walk_packages(docsearch.__path__, 'docsearch.')]
    observe.truth(names)
    for name in names:
        importlib.import_module(name)
