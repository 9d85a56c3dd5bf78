"""`sdebench episode show`'s conversation: messages, tool calls, grader feedback per attempt, cut sanely."""

from __future__ import annotations

from sdebench.runs import transcript
from tests.helpers import record

ATTEMPT = {"attempt": 1, "stop_reason": "submitted", "turns": 2, "resolved": False, "pass_ratio": 0.5, "guards": [],
           "grade_error": None, "grade_s": 0.1, "counts": {"FAIL_TO_PASS": {"passed": 1, "total": 1},
                                                           "HIDDEN_TO_PASS": {"passed": 0, "total": 2}}}


def test_a_conversation_reads_as_turns_tools_grades_and_feedback():
    rec = record(key="abc", interventions=1, stop_reason="max_interventions", attempts=[ATTEMPT, {**ATTEMPT, "attempt": 2}],
                 final_diff="+x = 1\n")
    events = [
        {"i": 1, "kind": "episode_start", "task_id": "t"},
        {"i": 2, "kind": "message", "role": "system", "content": "You fix bugs."},
        {"i": 3, "kind": "model_call", "turn": 1, "message": {"role": "assistant", "content": "Looking.", "tool_calls": [
            {"function": {"name": "bash", "arguments": '{"cmd": "ls"}'}}]}},
        {"i": 4, "kind": "tool", "name": "bash", "arguments": {"cmd": "ls"}, "output": "a.py\n" + "y" * 5000, "error": False},
        {"i": 5, "kind": "tool", "name": "write_file", "arguments": {"path": "a.py", "content": "x = 1\ny = 2\n"},
         "output": "ok", "error": True},
        {"i": 6, "kind": "grade", "resolved": False, "tests": [], "feedback": "Held-out tests fail."},
        {"i": 7, "kind": "feedback", "intervention": 1, "text": "Held-out tests fail."},
        {"i": 8, "kind": "model_call", "n": 2, "text": "Gateway reply", "tool_calls": [
            {"id": "c1", "name": "Bash", "arguments": '{"command": "pytest"}'}]},
        {"i": 9, "kind": "limit", "what": "max_turns"},
        {"i": 10, "kind": "grade", "resolved": False, "tests": []},
    ]
    text = transcript.render(rec, events)
    assert text.startswith("episode abc: ") and "outcome: unresolved (max_interventions); 1 interventions" in text
    assert "[system]\n    You fix bugs." in text and "[assistant, turn 1]\n    Looking.\n    -> bash(cmd=ls)" in text
    assert "[tool] bash(cmd=ls)\n    = a.py" in text and "... [4405 more chars]" in text  # cut at OUTPUT_CHARS
    assert "[tool (error)] write_file(path=a.py, content=<2 lines>)\n  content:\n    | x = 1\n    | y = 2" in text
    assert "[grade, attempt 1] not resolved (FAIL_TO_PASS 1/1, HIDDEN_TO_PASS 0/2)\n    > Held-out tests fail." in text
    assert "[feedback to the agent, intervention 1]" in text and "[grade, attempt 2] not resolved" in text
    assert "[assistant, turn 2]\n    Gateway reply\n    -> Bash(command=pytest)" in text
    assert "[limit] what=max_turns" in text and "episode_start" not in text and '"kind"' not in text
    assert text.rstrip().endswith("    +x = 1")


def test_without_a_trajectory_the_record_still_tells_the_grades_and_feedback():
    rec = record(resolved=True, resolved_at=2, interventions=1, stop_reason="resolved", feedback=["Tests fail."],
                 attempts=[ATTEMPT, {**ATTEMPT, "attempt": 2, "resolved": True}])
    text = transcript.render(rec, None)
    assert "resolved at submit 2" in text and "(no trajectory file" in text
    assert "[grade, attempt 2] resolved" in text and "[feedback 1]\n    > Tests fail." in text
