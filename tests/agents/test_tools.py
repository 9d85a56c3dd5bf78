"""The agent's tools against a real sandbox on a real squashed workspace."""

from __future__ import annotations

import os

import pytest

from sdebench.agents.tools import SPECS, TRUNCATED, Toolbox, truncate
from sdebench.agents.trajectory import Trajectory, read
from sdebench.components import build_delivery
from sdebench.delivery.modes import MEMORY_TOOL, STANDARD_TOOLS
from sdebench.sandbox import make_factory
from tests.minitask import build_all


@pytest.fixture(scope="module")
def mini(tmp_path_factory):
    return build_all(tmp_path_factory.mktemp("tasks"))


@pytest.fixture(params=["unsafe_local", pytest.param("local", marks=pytest.mark.bwrap)])
def box(mini, tmp_path, request):
    prep = build_delivery({"name": "memtool"}).prepare(mini["K"], tmp_path / "ep")
    sandbox = make_factory({"backend": request.param}).open(prep.workspace)
    visible = (*mini["K"].tests.fail_to_pass, *mini["K"].tests.pass_to_pass)
    tb = Toolbox(sandbox, prep.tools, prep.memory, Trajectory(tmp_path / "t.jsonl"), visible_tests=visible,
                 max_output_chars=2000)
    tb.ws = prep.workspace
    tb.traj_path = tmp_path / "t.jsonl"
    yield tb
    sandbox.close()


def test_schemas_are_openai_function_tools(box):
    schemas = box.schemas()
    assert [s["function"]["name"] for s in schemas] == [*STANDARD_TOOLS, MEMORY_TOOL] == box.names()
    for s in schemas:
        assert s["type"] == "function"
        params = s["function"]["parameters"]
        assert params["type"] == "object" and set(params["required"]) <= set(params["properties"])
        assert s["function"]["description"]
    edit = next(s for s in schemas if s["function"]["name"] == "edit_file")["function"]["parameters"]
    assert edit["required"] == ["path", "old_string", "new_string"]


def test_read_write_edit(box):
    r = box.call("read_file", {"path": "shop/pricing.py"})
    assert not r.error and "LOYALTY_RATE = 0.10" in r.output
    assert box.call("read_file", {"path": "shop/pricing.py", "start_line": 3, "end_line": 3}).output == "LOYALTY_RATE = 0.10\n"
    r = box.call("edit_file", {"path": "shop/pricing.py", "old_string": "0.10", "new_string": "0.12"})
    assert not r.error and "LOYALTY_RATE = 0.12" in (box.ws / "shop/pricing.py").read_text()
    r = box.call("edit_file", {"path": "shop/pricing.py", "old_string": "no such text", "new_string": "x"})
    assert r.error and "not found" in r.output
    r = box.call("edit_file", {"path": "shop/pricing.py", "old_string": "price", "new_string": "cost"})
    assert r.error and "occurs" in r.output and "times" in r.output
    assert box.call("write_file", {"path": "new/dir/f.txt", "content": "hello"}).output.startswith("Wrote 5 chars")
    assert (box.ws / "new/dir/f.txt").read_text() == "hello"
    r = box.call("read_file", {"path": "missing.py"})
    assert r.error and "no such file" in r.output
    assert box.call("read_file", {"path": "shop"}).error


@pytest.mark.parametrize("path", ["/etc/passwd", "../outside.txt", "shop/../../x", "~/x", "", "."])
def test_paths_outside_the_workspace_are_rejected(box, path):
    for name, args in (("read_file", {"path": path}), ("write_file", {"path": path, "content": "x"})):
        r = box.call(name, args)
        assert r.error, (name, path, r.output)
    assert not (box.ws.parent / "outside.txt").exists()


def test_symlinks_resolving_outside_are_rejected(box, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    os.symlink(secret, box.ws / "link.txt")
    os.symlink(tmp_path, box.ws / "linkdir")
    os.symlink("shop/pricing.py", box.ws / "inside.py")
    r = box.call("read_file", {"path": "link.txt"})
    assert r.error and "outside" in r.output and "top secret" not in r.output
    assert box.call("write_file", {"path": "linkdir/new.txt", "content": "x"}).error
    assert not (tmp_path / "new.txt").exists()
    assert box.call("edit_file", {"path": "link.txt", "old_string": "top", "new_string": "x"}).error
    assert secret.read_text() == "top secret"
    assert "LOYALTY_RATE" in box.call("read_file", {"path": "inside.py"}).output


def test_bash_runs_in_the_workspace_with_timeout_and_truncation(box):
    r = box.call("bash", {"command": "ls shop; echo err >&2; exit 3"})
    assert not r.error and "exit code: 3" in r.output and "pricing.py" in r.output and "stderr:\nerr" in r.output
    r = box.call("bash", {"command": "sleep 20", "timeout": 1})
    assert "killed after 1s timeout" in r.output and r.duration_s < 10
    r = box.call("bash", {"command": "python3 -c \"print('x' * 50000)\""})
    assert "chars truncated" in r.output and len(r.output) < 2200


def test_truncate_keeps_head_and_tail():
    text = "a" * 100 + "b" * 100
    out = truncate(text, 50)
    assert out.startswith("a" * 25) and out.endswith("b" * 25) and TRUNCATED.format(n=150) in out
    assert truncate("short", 50) == "short"


def test_run_tests_runs_only_visible_tests(box, mini):
    task = mini["K"]
    r = box.call("run_tests", {})
    assert not r.error
    assert r.output.startswith(f"2 of {len(box.visible_tests())} visible tests passed.")
    assert "FAILED   tests/test_pricing.py::test_loyalty_discount_is_more_than_ten_percent" in r.output
    for hidden in task.tests.hidden_to_pass:
        assert hidden not in r.output
    assert not list(box.ws.glob(".sdebench-*"))  # runner files are cleaned up
    box.call("edit_file", {"path": "shop/pricing.py", "old_string": "0.10", "new_string": "0.17"})
    assert box.call("run_tests", {}).output.startswith("3 of 3 visible tests passed.")


def test_memory_search_submit_and_bad_calls(box):
    r = box.call("memory_search", {"query": "loyalty discount percent", "k": 2})
    assert not r.error and r.output.startswith("#1 (score") and "[K]" in r.output and "#3" not in r.output
    assert box.call("memory_search", {}).error
    r = box.call("submit", {})
    assert r.submitted and not r.error and box.submitted
    assert box.call("nope", {}).output.startswith("Error: unknown tool 'nope'")
    assert box.call("read_file", {"path": 12}).error
    assert box.call("read_file", "not json").error
    assert not box.call("read_file", '{"path": "shop/pricing.py"}').error
    assert box.call("bash", {"command": "true", "timeout": "soon"}).error
    stats = box.stats()
    assert stats["tool_calls"]["memory_search"] == 2 and stats["tool_calls"]["unknown"] == 1
    assert stats["tool_errors"] == 5 and stats["tools_s"] > 0
    events = read(box.traj_path)
    assert [e["name"] for e in events if e["kind"] == "tool"][:3] == ["memory_search", "memory_search", "submit"]


def test_memory_search_only_in_memtool(mini, tmp_path):
    prep = build_delivery({"name": "squashed"}).prepare(mini["K"], tmp_path)
    tb = Toolbox(make_factory({"backend": "unsafe_local"}).open(prep.workspace), prep.tools)
    assert MEMORY_TOOL not in tb.names()
    assert tb.call("memory_search", {"query": "x"}).error
    with pytest.raises(ValueError, match="unknown tools: memory_search"):  # no memory system, no memory tool
        Toolbox(tb.sandbox, (*STANDARD_TOOLS, MEMORY_TOOL))
    with pytest.raises(ValueError, match="unknown tools"):
        Toolbox(tb.sandbox, ("teleport",))
    assert set(SPECS) == set(STANDARD_TOOLS)  # memory tools are the memory system's own
