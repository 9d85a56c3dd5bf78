"""Default-fail verifier shipped inside exported Harbor tasks (copied as tests/verify.py).

Stdlib only; runs in the task container as `python3 /tests/verify.py` after tests/test.sh wrote
reward 0 to reward.json. It grades a copy of /app: test and pytest-config files back to their HEAD copies
(agent-added ones dropped), hidden tests added, then the guards (unchanged source, compile,
import) and the pytest run through the sdebench runner (tests/_runner.py, JSON per-test report).
Reward 1 iff every FAIL_TO_PASS, PASS_TO_PASS and HIDDEN_TO_PASS test passes.
SDEBENCH_APP and SDEBENCH_LOG_DIR override /app and /logs/verifier (for checks outside a container).
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
APP = Path(os.environ.get("SDEBENCH_APP", "/app"))
LOGS = Path(os.environ.get("SDEBENCH_LOG_DIR", "/logs/verifier"))
CONFIG_NAMES = {"conftest.py", "pytest.ini", ".pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml"}
SKIP_PARTS = {".git", "__pycache__", ".pytest_cache"}


def is_protected(rel, declared):
    """Test and pytest-config files: graded from their HEAD copies only."""
    parts = rel.split("/")
    name = parts[-1]
    return (
        rel in declared
        or "tests" in parts[:-1]
        or name in CONFIG_NAMES
        or (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")))
    )


def is_memory(rel):
    """Docs and agent notes: never source."""
    return rel.endswith(".md") or rel.startswith(".agent/") or rel.startswith("docs/")


def walk(root):
    """Regular files under root as sorted relative paths (caches and .git left out)."""
    out = []
    for p in root.rglob("*"):
        rel = p.relative_to(root)
        if p.is_file() and not p.is_symlink() and not SKIP_PARTS & set(rel.parts) and p.suffix not in (".pyc", ".pyo"):
            out.append(rel.as_posix())
    return sorted(out)


def sha(path):
    """sha256 of a file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def module_name(rel):
    """The importable name of a .py path, or None."""
    parts = rel[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


def outcome(tests, test_id):
    """The outcome of an id; an id without parameters needs every instance to pass."""
    if test_id in tests:
        return tests[test_id]["outcome"]
    inst = [v["outcome"] for k, v in tests.items() if k.startswith(test_id + "[")]
    if not inst:
        return "missing"
    return "passed" if all(o == "passed" for o in inst) else next(o for o in inst if o != "passed")


def finish(reward, details):
    """Write Harbor's reward.json (reward and pass ratio) and details; print the verdict."""
    rewards = {"reward": reward, "pass_ratio": details.get("pass_ratio", 0.0)}
    (LOGS / "reward.json").write_text(json.dumps(rewards, sort_keys=True) + "\n")
    (LOGS / "details.json").write_text(json.dumps(details, indent=1, sort_keys=True) + "\n")
    print(json.dumps({"reward": reward, **{k: v for k, v in details.items() if k != "tests"}}, sort_keys=True))
    return 0


def main():
    """Grade /app; reward stays 0 on any failure."""
    LOGS.mkdir(parents=True, exist_ok=True)
    (LOGS / "reward.json").write_text('{"reward": 0}\n')
    spec = json.loads((HERE / "expected.json").read_text())
    declared = set(spec["test_files"])
    tmp = Path(tempfile.mkdtemp(prefix="verify-"))
    work = tmp / "app"
    try:
        work.mkdir()
        for rel in walk(APP):
            if not is_protected(rel, declared):
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(APP / rel, work / rel)
        for sub in ("pristine", "hidden"):
            base = HERE / sub
            for rel in walk(base) if base.is_dir() else []:
                (work / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(base / rel, work / rel)
        sources = spec["sources"]
        now = {r: sha(work / r) for r in walk(work) if not is_protected(r, declared) and not is_memory(r)}
        changed = sorted(r for r in now if sources.get(r) != now[r])
        if not changed and not [r for r in sources if r not in now]:
            return finish(0, {"guard": "unchanged: no source file differs from the original"})
        for rel in changed:
            if rel.endswith(".py"):
                try:
                    compile((work / rel).read_bytes(), rel, "exec", dont_inherit=True)
                except (SyntaxError, ValueError) as e:
                    return finish(0, {"guard": f"compile: {rel}: {e}"})
        modules = [m for m in (module_name(r) for r in changed if r.endswith(".py")) if m]
        ids = [i for group in spec["tests"].values() for i in group]
        paths = sorted({i.split("::")[0] for i in ids})
        (work / ".verify-pytest.ini").write_text("[pytest]\naddopts =\n")
        report = work / ".verify-report.json"
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")}
        env.update({"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"})
        argv = [sys.executable, "-E", "-s", "-B", str(HERE / "_runner.py"), str(report), *modules, "--", "-q",
                "--tb=short", "-p", "no:cacheprovider", "--rootdir=.", "-c", ".verify-pytest.ini", *paths]
        try:
            proc = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=spec["timeout"])
        except subprocess.TimeoutExpired:
            return finish(0, {"error": f"test run timed out after {spec['timeout']}s"})
        if not report.is_file():
            return finish(0, {"error": f"no test report (exit {proc.returncode}): {proc.stderr[-500:]}"})
        data = json.loads(report.read_text())
        if data.get("import_errors"):
            return finish(0, {"guard": "import", "import_errors": data["import_errors"]})
        results = {g: {i: outcome(data["tests"], i) for i in group} for g, group in spec["tests"].items()}
        total = sum(len(r) for r in results.values())
        passed = sum(o == "passed" for r in results.values() for o in r.values())
        details = {
            "counts": {g: {"passed": sum(o == "passed" for o in r.values()), "total": len(r)} for g, r in results.items()},
            "pass_ratio": round(passed / total, 6) if total else 0.0,
            "tests": results,
        }
        return finish(1 if total and passed == total else 0, details)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
