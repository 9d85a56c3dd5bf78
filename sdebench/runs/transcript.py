"""An episode as a readable conversation (`sdebench episode show`): each turn's messages, the tool
calls with their names and arguments, the grader's feedback per attempt and the outcome, from the
record and its trajectory (sdebench.agents.trajectory). Long texts are cut with a note of how much
was left out; nothing is printed as raw JSON events.
"""

from __future__ import annotations

import json
from typing import Any

from sdebench.runs.record import EpisodeRecord
from sdebench.runs.rules import is_error, outcome_label

MESSAGE_CHARS = 1500  # a message's text
OUTPUT_CHARS = 600  # a tool's output
ARGUMENT_CHARS = 300  # one argument value
SKIPPED = ("episode_start", "agent_start", "run_end", "episode_end", "agent_run", "agent_exit", "agent_stop")


def clip(text: Any, limit: int) -> str:
    """`text` cut to `limit` characters, saying how many were left out."""
    s = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    return s if len(s) <= limit else f"{s[:limit]}... [{len(s) - limit} more chars]"


def indent(text: str, pad: str = "    ") -> str:
    """Every line of `text` indented by `pad`."""
    return "\n".join(pad + line for line in (text.splitlines() or [""]))


def call(name: Any, arguments: Any) -> str:
    """A tool call as `name(key=value, ...)`, each value cut; multi-line values on their own indented lines."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return f"{name}({clip(arguments, ARGUMENT_CHARS)})"
    if not isinstance(arguments, dict):
        return f"{name}({clip(arguments, ARGUMENT_CHARS)})"
    inline, blocks = [], []
    for k, v in arguments.items():
        if isinstance(v, str) and "\n" in v:
            inline.append(f"{k}=<{len(v.splitlines())} lines>")
            blocks.append(f"  {k}:\n{indent(clip(v, ARGUMENT_CHARS), '    | ')}")
        else:
            inline.append(f"{k}={clip(v if isinstance(v, str) else json.dumps(v, default=str), ARGUMENT_CHARS)}")
    return f"{name}({', '.join(inline)})" + ("".join("\n" + b for b in blocks))


def header(rec: EpisodeRecord) -> list[str]:
    """Who ran what and how it ended, in two or three lines."""
    i, o, u = rec.identity, rec.outcome, rec.usage
    state = f"resolved at submit {o.resolved_at}" if o.resolved and not is_error(rec) else outcome_label(rec)
    out = [f"episode {rec.key or '-'}: {i.task_id} ({i.family} v{i.variant}, source {i.source}, {i.competency}) "
           f"delivery={i.delivery} agent={i.agent} model={i.model} seed={i.seed}",
           f"outcome: {state}; {o.interventions} interventions, {u.turns} turns, {len(rec.attempts)} attempts, "
           f"${u.cost_usd:.4f}, {rec.timing.wall_s:.1f}s"]
    if o.error:
        out.append(f"error: {clip(o.error, MESSAGE_CHARS)}")
    return out


def _message(ev: dict[str, Any]) -> list[str]:
    role = ev.get("role") or ev.get("kind")
    text = ev.get("content") if "content" in ev else ev.get("text")
    label = f"[{role}{' (feedback)' if ev.get('feedback') else ''}]"
    return [label, indent(clip(text if text is not None else "", MESSAGE_CHARS))]


def _model_call(ev: dict[str, Any]) -> list[str]:
    """The assistant's reply: the built-in agent logs its message, the gateway its text and tool calls."""
    msg = ev.get("message") if isinstance(ev.get("message"), dict) else {}
    text = msg.get("content") if msg else ev.get("text")
    out = [f"[assistant, turn {ev.get('turn', ev.get('n', '?'))}]"]
    if text:
        out.append(indent(clip(text, MESSAGE_CHARS)))
    for c in (msg.get("tool_calls") if msg else ev.get("tool_calls")) or []:
        if isinstance(c, dict):
            fn = c.get("function") if isinstance(c.get("function"), dict) else c
            out.append(indent("-> " + call(fn.get("name"), fn.get("arguments"))))
    return out


def _tool(ev: dict[str, Any]) -> list[str]:
    state = " (error)" if ev.get("error") else ""
    return [f"[tool{state}] {call(ev.get('name'), ev.get('arguments'))}",
            indent(clip(ev.get("output") if ev.get("output") is not None else "", OUTPUT_CHARS), "    = ")]


def _grade(ev: dict[str, Any], n: int, rec: EpisodeRecord) -> list[str]:
    a = rec.attempts[n - 1] if n <= len(rec.attempts) else None
    verdict = "resolved" if ev.get("resolved") else "not resolved"
    counts = ", ".join(f"{g} {c.get('passed')}/{c.get('total')}" for g, c in sorted(a.counts.items())) if a else ""
    extra = f"; guards: {', '.join(a.guards)}" if a and a.guards else ""
    extra += f"; grade error: {a.grade_error}" if a and a.grade_error else ""
    out = [f"[grade, attempt {n}] {verdict}" + (f" ({counts})" if counts else "") + extra]
    if ev.get("feedback"):
        out.append(indent(clip(ev["feedback"], MESSAGE_CHARS), "    > "))
    return out


def render(rec: EpisodeRecord, events: list[dict[str, Any]] | None) -> str:
    """The whole episode as text: header, then the conversation, then the outcome."""
    out = header(rec) + [""]
    if events is None:
        out.append("(no trajectory file: only the record is known)")
        for a in rec.attempts:
            out.append(f"[grade, attempt {a.attempt}] {'resolved' if a.resolved else 'not resolved'}")
        for n, text in enumerate(rec.outcome.feedback, 1):
            out.append(f"[feedback {n}]\n{indent(clip(text, MESSAGE_CHARS), '    > ')}")
    grades = 0
    for ev in events or []:
        kind = ev.get("kind")
        if kind in SKIPPED:
            continue
        if kind in ("message", "user", "system", "assistant"):
            out += _message(ev)
        elif kind == "model_call":
            out += _model_call(ev)
        elif kind in ("tool", "tool_result"):
            out += _tool(ev)
        elif kind == "grade":
            grades += 1
            out += _grade(ev, grades, rec)
        elif kind == "feedback":
            out.append(f"[feedback to the agent, intervention {ev.get('intervention')}]")
            out.append(indent(clip(ev.get("text") or "", MESSAGE_CHARS), "    > "))
        else:  # limits, format errors, notes, errors: one line each
            rest = {k: v for k, v in ev.items() if k not in ("i", "t", "kind", "traceback")}
            out.append(f"[{kind}] {clip(', '.join(f'{k}={v}' for k, v in rest.items()), ARGUMENT_CHARS)}")
    out += ["", "outcome: " + header(rec)[1].split("outcome: ", 1)[1]]
    if rec.outcome.final_diff:
        out += ["final diff:", indent(clip(rec.outcome.final_diff, MESSAGE_CHARS * 2))]
    return "\n".join(out) + "\n"
