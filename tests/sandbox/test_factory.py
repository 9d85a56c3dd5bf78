import pytest

from sdebench.sandbox import SandboxError, make_factory
from sdebench.sandbox.unsafe import UnsafeLocalFactory


def test_unsafe_local_only_when_named(tmp_path):
    f = make_factory({"backend": "unsafe_local", "tasks_dir": "tasks", "output_cap": 1000})
    assert isinstance(f, UnsafeLocalFactory)
    with f.open(tmp_path) as sb:
        assert sb.exec("echo hi", timeout=10).stdout == "hi\n"


def test_unknown_backend_and_options_are_clear_errors():
    with pytest.raises(SandboxError, match="unknown sandbox backend 'bwrap'"):
        make_factory({"backend": "bwrap"})
    with pytest.raises(SandboxError, match="colour"):
        make_factory({"backend": "local", "colour": "red"})
    with pytest.raises(SandboxError, match="colour"):
        make_factory({"backend": "unsafe_local", "colour": "red"})


def test_default_backend_is_local():
    import shutil

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed")
    assert make_factory({}).name == "local"
