import shutil
import subprocess
import sys

import pytest

from sdebench.generation import generate
from sdebench.generation.readers import READERS, Judged
from tests.hardfixture import write_conflict_family
from tests.helpers import ROOT, write_broken

SANDBOX = {"backend": "unsafe_local"}

MUTATIONS = {
    # the fact also appears in a second source (F placement, fact copied into CONVENTIONS.md)
    "leak-second-source": (
        "F",
        1,
        """
files = dict(commits[0].files)
files["docs/CONVENTIONS.md"] += "- Money rounds toward zero.\\n"
commits[0] = Commit(commits[0].message, files)
spec = dataclasses.replace(spec, commits=tuple(commits))
""",
    ),
    # a held-out test that keeps its expected values in a table: the answer is in its source
    "answer-in-table": (
        "K",
        5,
        """
path = "tests/test_hidden_rounding.py"
table = spec.hidden_tests[path] + (
    "\\n\\nCASES = [('10.005', '10.00'), ('10.30', '10.25')]\\n\\n\\n"
    "def test_hidden_table():\\n"
    "    for amount, expected in CASES:\\n"
    "        assert quantize_amount(Decimal(amount)) == Decimal(expected)\\n")
spec = dataclasses.replace(spec, hidden_tests={path: table},
                           hidden_to_pass=spec.hidden_to_pass + (path + "::test_hidden_table",))
""",
    ),
    # a held-out test that names the fact
    "fact-in-hidden-test": (
        "K",
        5,
        """
path = "tests/test_hidden_rounding.py"
spec = dataclasses.replace(spec, hidden_tests={path: spec.hidden_tests[path] + "\\n# rounds toward zero\\nMODE = 'ROUND_DOWN'\\n"})
""",
    ),
    # a guessable fact: the conventional fix is the oracle fix
    "guessable": ("K", 2, "spec = dataclasses.replace(spec, conventional_files=dict(spec.oracle_files))"),
    # a red PASS_TO_PASS test at HEAD
    "red-p2p": (
        "K",
        4,
        """
files = dict(commits[0].files)
files["tests/test_invoice.py"] += "\\n\\ndef test_always_red():\\n    assert False\\n"
commits[0] = Commit(commits[0].message, files)
spec = dataclasses.replace(spec, commits=tuple(commits),
                           pass_to_pass=spec.pass_to_pass + ("tests/test_invoice.py::test_always_red",))
""",
    ),
    # a FAIL_TO_PASS test that is already green at HEAD
    "green-f2p": (
        "K",
        4,
        "spec = dataclasses.replace(spec, fail_to_pass=spec.fail_to_pass + spec.pass_to_pass[:1], "
        "pass_to_pass=spec.pass_to_pass[1:])",
    ),
    # the fixed file is reachable in history (committed, then reverted)
    "fix-in-history": (
        "none",
        5,
        """
module = next(iter(spec.oracle_files))
head = commits[-2].files[module]
commits[-1:-1] = [Commit("wip", dict(spec.oracle_files)), Commit("revert wip", {module: head})]
spec = dataclasses.replace(spec, commits=tuple(commits))
""",
    ),
    # a build that differs between two calls
    "nondeterministic": ("K", 6, "spec = dataclasses.replace(spec, statement=spec.statement + str(random.random()))"),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_validator_rejects_broken_generator(tmp_path, name):
    source, rule, mutation = MUTATIONS[name]
    path = write_broken(tmp_path / "gens", f"broken-{name}", mutation)
    out = tmp_path / "out"
    outcome = generate.build_task(path, 0, source, out, SANDBOX)
    assert not outcome.written
    assert outcome.task_id == f"broken-{name}-v0-{source}"
    assert any(v.startswith(f"rule {rule} ") for v in outcome.violations), outcome.violations
    assert not (out / outcome.task_id).exists()


def test_unbroken_copy_is_accepted(tmp_path):
    path = write_broken(tmp_path / "gens", "unbroken", "pass")
    outcome = generate.build_task(path, 0, "X", tmp_path / "out", SANDBOX)
    assert outcome.violations == [] and outcome.written
    assert (tmp_path / "out" / "unbroken-v0-X" / "task.toml").is_file()


def test_crashing_and_unloadable_generators_are_reported(tmp_path):
    gens = tmp_path / "gens"
    write_broken(gens, "crashy", "raise RuntimeError('boom')")
    (gens / "syntax_error.py").write_text("def (:\n")
    (gens / "no_generator.py").write_text("X = 1\n")
    found, errors = generate.discover(gens)
    assert set(found) == {"crashy"}
    assert any("syntax_error.py: import failed: SyntaxError" in e for e in errors)
    assert any("no_generator.py: defines no GENERATOR" in e for e in errors)
    outcome = generate.build_task(found["crashy"], 0, "K", tmp_path / "out", SANDBOX)
    assert outcome.violations == ["generator crashed: RuntimeError: boom"]


def _cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "sdebench.generate", "--no-progress", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_cli_reports_task_and_rule_and_exits_nonzero(tmp_path):
    gens = tmp_path / "gens"
    write_broken(gens, "broken-guessable", MUTATIONS["guessable"][2])
    r = _cli("--generators", str(gens), "--out", str(tmp_path / "out"), "--sources", "K")
    assert r.returncode == 1
    assert "broken-guessable-v0-K: rule 2 (non-guessable)" in r.stderr


def test_cli_rejects_unknown_names(tmp_path):
    r = _cli("--families", "no-such-family", "--out", str(tmp_path))
    assert r.returncode == 1 and "unknown families: no-such-family" in r.stderr
    r = _cli("--sources", "Q", "--out", str(tmp_path))
    assert r.returncode == 2 and "unknown sources: Q" in r.stderr


def test_check_detects_a_changed_byte(tmp_path):
    out = tmp_path / "tasks"
    shutil.copytree(ROOT / "tasks" / "ttlcache-v0-K", out / "ttlcache-v0-K")
    r = _cli("--families", "ttlcache", "--variants", "0", "--sources", "K", "--out", str(out), "--check")
    assert r.returncode == 0, r.stderr
    patch = out / "ttlcache-v0-K" / "oracle.patch"
    patch.write_text(patch.read_text() + " ")
    r = _cli("--families", "ttlcache", "--variants", "0", "--sources", "K", "--out", str(out), "--check")
    assert r.returncode == 1 and "ttlcache-v0-K: oracle.patch differs" in r.stderr


def test_rule8_passes_a_hard_task_the_readers_miss_and_refuses_one_they_solve(tmp_path):
    good = write_conflict_family(tmp_path / "gens")
    probed = generate.probe_variant(good, 0, SANDBOX)
    assert probed.readers is not None and probed.readers.problem is None
    outcome = generate.build_task(good, 0, "K", tmp_path / "out", SANDBOX, probed)
    assert outcome.violations == [] and outcome.written and outcome.competency == "conflict"
    assert 'competency = "conflict"' in (tmp_path / "out" / "conflict-ttl-v0-K" / "task.toml").read_text()
    resolved = {(j.reader, j.view) for j in outcome.readers if j.resolves}
    assert resolved == {(r, "oracle") for r in READERS}  # only from the fact sentence
    picks = {(j.reader, j.view): j.pick for j in outcome.readers}
    assert picks[("reader-majority", "full")] == "300"  # said three times
    assert picks[("reader-latest", "full")] == picks[("reader-top1", "full")] == "600"  # latest; the best hit
    # Without the later note about another value, the latest dated mention is the fact's.
    bad = write_conflict_family(tmp_path / "bad", "conflict-ttl-nowarm", warmer=False)
    outcome = generate.build_task(bad, 0, "K", tmp_path / "out", SANDBOX, probed)
    assert not outcome.written
    assert any(v.startswith("rule 8 (naive memory readers fail (hard tier)): reader-latest resolves from the memory "
                            "the full delivery shows") for v in outcome.violations), outcome.violations
    lines = generate.reader_calibration([outcome])
    assert lines and lines[0].startswith("rule 8, hard tier: readers resolve over 1 tasks with memory: ")
    assert "reader-latest: full 100%" in lines[0]


def test_a_hard_task_needs_a_fact_space_and_a_known_competency(tmp_path):
    path = write_broken(tmp_path / "gens", "hard-no-space", 'spec = dataclasses.replace(spec, competency="scope")')
    outcome = generate.build_task(path, 0, "K", tmp_path / "out", SANDBOX)
    assert outcome.violations == ["rule 8 (naive memory readers fail (hard tier)): a hard-tier family must declare "
                                  "its fact space (the readers pick among its candidates)"]
    path = write_broken(tmp_path / "gens", "bad-competency", 'spec = dataclasses.replace(spec, competency="guess")')
    outcome = generate.build_task(path, 0, "K", tmp_path / "out", SANDBOX)
    assert any("unknown competency 'guess'" in v for v in outcome.violations)


def test_recall_tasks_report_the_readers_without_failing_on_them():
    judged = [Judged("reader-top1", "full", "1", True), Judged("reader-top1", "memtool", None, False)]
    outcomes = [generate.TaskOutcome("a-v0-K", competency="recall", source="K", readers=judged),
                generate.TaskOutcome("a-v0-none", competency="recall", source="none", readers=judged)]
    (line,) = generate.reader_calibration(outcomes)
    assert line.startswith("rule 8, recall tier (calibration): readers resolve over 1 tasks with memory: "
                           "reader-top1: full 100%, memtool 0%, inject -, oracle -;")
    assert generate.validate.check_readers("recall", judged) == []
