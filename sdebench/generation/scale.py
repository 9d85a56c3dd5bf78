"""Memory at realistic size: one knob that grows any family's history, docs and notes.

A family emits a small repo (a handful of commits and docs for most). `enlarge(spec, scale, gen)`
turns the emitted `TaskSpec` into the same task with a realistic amount of memory around the
fact, without per-family code:

- history: filler commits (the kit's `make_filler`, under the family's own package, in new
  subpackages) spread over every gap of the family's history, so the commit that states the fact
  (H) or regressed it sinks among thousands; the repro commit stays at HEAD.
- docs: ADRs (accepted, proposed, deprecated, superseded by one of them), service pages, runbooks
  and design notes, most added by their own commit over the history, the rest in the initial import.
- notes: hundreds of entries in `.agent/preferences.md` and `.agent/past_fixes.md` (and some
  conventions), the family's own entries (the fact's, in F/X) at a random place among them.
- distractors: the code's own identifiers with other values "in neighbouring services", topic
  words of the statement, and *near-miss facts*: the family's own memory entries told for other
  candidates of its fact space (`tell(variant, candidate)`), framed as superseded decisions or as
  notes about a neighbouring service, in docs, notes and commit messages.

- the fact in the domain's words: the fact-bearing item (the commit message of H, the lines of the
  K doc or the F/X entry that carry the fact) names no code identifier; `UPPER_SNAKE` constants,
  `snake_case` names and `module.py` files become plain words ("max requests per connection: 226"),
  so a search by the code's names does not find it (the near-miss items are told the same way, so
  the style tells nothing). A line whose fact tokens would not survive keeps its words.

Every distractor is built for the variant, not the placement (the same in H, K, F, X and none),
and is redrawn until it holds no fact token, so rule 1 still holds: the fact's tokens stay in the
designated source only, and its item stays the one current statement about this module. Near-miss
candidates come from the space's values the draw can never produce (conventional values, the
margins around the draw), so they tell nothing about where the fact lies. Deterministic in
(family, variant, scale): rule 6 holds. The task's code and tests are unchanged apart from the
filler modules (never imported by the task's own tests); rule 7's probe still runs over the scaled
HEAD (`probe_family(..., scale=)`), so every rule is proved on the task as shipped.
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from sdebench.generation.kit import FILLER_TEST, Filler, FillerVocab, make_filler
from sdebench.generation.seeded import salt
from sdebench.generation.spec import Commit, TaskSpec
from sdebench.generation.validate import head_tree
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES, artifact_kind
from sdebench.tasks.record import SCALE_TAG
from sdebench.tasks.tokens import find_tokens

ADR_DIR = "docs/adr"


@dataclass(frozen=True)
class Scale:
    """How much memory a task carries beyond what its family emits (all zero: unchanged)."""

    commits: int = 0  # total commits of the history (at least what the family emits)
    docs: int = 0  # knowledge files added (ADRs, service pages, runbooks, design notes)
    notes: int = 0  # entries added to each `.agent` notes file
    near_miss: int = 0  # candidates of the fact space told as superseded / neighbouring facts

    @property
    def is_default(self) -> bool:
        """Whether the scale changes nothing."""
        return not (self.commits or self.docs or self.notes or self.near_miss)

    @property
    def label(self) -> str:
        """The level's name, or its counts (`commits=..,docs=..,notes=..,near_miss=..`)."""
        for name, level in LEVELS.items():
            if level == self:
                return name
        return ",".join(f"{k}={getattr(self, k)}" for k in KEYS)


KEYS = ("commits", "docs", "notes", "near_miss")
LEVELS = {
    "default": Scale(),
    "medium": Scale(commits=500, docs=40, notes=80, near_miss=2),
    "large": Scale(commits=2000, docs=120, notes=300, near_miss=4),
}
SCALE_HELP = (
    "memory scale: default (as the family emits it: the published tasks), medium (500 commits, 40 docs, "
    "80 notes per .agent file, 2 near-miss facts), large (2000, 120, 300, 4), or counts such as "
    "'commits=3000,docs=150' or 'large,notes=500' (a level, then overrides)"
)


def parse_scale(text: str) -> Scale:
    """A scale from a level name and/or `key=count` items; ValueError with a one-line reason."""
    base, items = Scale(), [p.strip() for p in str(text).split(",") if p.strip()]
    if not items:
        raise ValueError("empty --scale (choose a level: " + ", ".join(LEVELS) + ")")
    if "=" not in items[0]:
        if items[0] not in LEVELS:
            raise ValueError(f"unknown scale level {items[0]!r} (choose among {', '.join(LEVELS)} or key=count items)")
        base, items = LEVELS[items[0]], items[1:]
    counts = {}
    for item in items:
        key, _, value = item.partition("=")
        key = key.strip()
        if key not in KEYS:
            raise ValueError(f"unknown scale key {key!r} in {text!r} (keys: {', '.join(KEYS)})")
        try:
            counts[key] = int(value)
        except ValueError:
            raise ValueError(f"scale {key} takes a whole number, got {value.strip()!r}") from None
        if counts[key] < 0:
            raise ValueError(f"scale {key} must not be negative, got {counts[key]}")
    return replace(base, **counts)


def scale_tag(scale: Scale) -> str:
    """The tag a scaled task carries (default tasks carry none)."""
    return f"{SCALE_TAG}{scale.label}"


# --- words the distractors are made of ---------------------------------------------------------

SERVICES = ("billing-api", "catalog", "search-indexer", "notifier", "ledger-sync", "pricing-engine", "geo-lookup",
            "auth-gateway", "reporting", "warehouse-feed", "partner-portal", "audit-trail", "scheduler", "exports",
            "quota-service", "rates-importer", "invoicing", "fulfilment", "identity", "metrics-relay")
TEAMS = ("payments", "platform", "data", "ops", "growth", "core", "integrations", "support tools", "finance", "infra")
NOUNS = ("order", "invoice", "shipment", "customer", "account", "batch", "report", "session", "ticket", "payout",
         "voucher", "tenant")
NUMBERS = ("amount", "quantity", "count", "duration_s", "weight_kg", "score", "retries")
LABELS = ("region", "status", "channel", "owner", "currency", "tier")
AREAS = ("reporting", "exports", "admin", "jobs", "notifications", "integrations", "analytics", "support", "storage",
         "webhooks", "maintenance", "imports", "backoffice", "housekeeping", "partners", "dashboards")
TOPICS = ("retries", "timeouts", "pagination", "rate limits", "caching", "logging", "feature flags", "time zones",
          "currency conversion", "batch sizes", "idempotency keys", "schema migrations", "audit logging",
          "error reporting", "configuration layering", "test fixtures", "dependency pinning", "data retention")
UNITS = ("s", "ms", "%", "", " requests/min", " items", " days", " MB")
_WORD = re.compile(r"[A-Za-z]{5,}")
_CONST = re.compile(r"^([A-Z][A-Z0-9_]{3,})\s*[:=]", re.M)
_STOP = frozenset(["about", "after", "again", "because", "before", "being", "every", "first", "other", "should", "their", "there", "these", "those", "which", "while", "would", "please", "fixes", "reproduces", "tests"])


@dataclass
class _Ctx:
    """What the distractors of one task draw on."""

    r: random.Random
    avoid: tuple[str, ...]
    project: str
    consts: list[str]
    modules: list[str]
    topics: list[str]

    def clean(self, make: Callable[[], str], tries: int = 25) -> str | None:
        """A text from `make` that holds no fact token (None after `tries` draws)."""
        for _ in range(tries):
            text = make()
            if not find_tokens(text, self.avoid):
                return text
        return None

    def value(self) -> str:
        """A plausible setting value (a number with a unit)."""
        r = self.r
        n = r.choice([r.randint(2, 99), r.randint(100, 999) * r.choice([1, 1, 10]), round(r.uniform(0.1, 9.9), 2)])
        return f"{n}{r.choice(UNITS)}"

    def const(self) -> str:
        return self.r.choice(self.consts) if self.consts else self.r.choice(["TIMEOUT_S", "BATCH_SIZE", "MAX_RETRIES"])

    def topic(self) -> str:
        return self.r.choice(TOPICS)

    def report_word(self) -> str:
        """A word of the task's statement (what bug reports in this project talk about)."""
        return self.r.choice(self.topics) if self.topics else self.r.choice(NOUNS)

    def module(self) -> str:
        return self.r.choice(self.modules) if self.modules else f"{self.project}/core.py"


def _context(spec: TaskSpec, head: dict[str, str], key: str, project: str) -> _Ctx:
    code = {p: c for p, c in head.items() if p.endswith(".py") and artifact_kind(p) is None and "test" not in p}
    consts = sorted({m for c in code.values() for m in _CONST.findall(c)} - {"__all__"})
    words = sorted({w.lower() for w in _WORD.findall(spec.statement)} - _STOP)
    avoid = tuple(spec.fact_tokens)
    return _Ctx(random.Random(key), avoid, project, [c for c in consts if not find_tokens(c, avoid)],
                sorted(code), [w for w in words if not find_tokens(w, avoid)])


# --- docs --------------------------------------------------------------------------------------


def _adr(c: _Ctx, number: int, later: int) -> tuple[str, str, str]:
    r = c.r
    topic = c.topic()
    status = r.choices(["Accepted", f"Superseded by ADR-{later:04d}", "Deprecated", "Proposed"], [6, 2, 1, 1])[0]
    title = r.choice([f"{topic.capitalize()} in the {r.choice(SERVICES)} client", f"How we handle {topic}",
                      f"{topic.capitalize()} for {r.choice(NOUNS)} processing", f"One policy for {topic}"])
    const, svc = c.const(), r.choice(SERVICES)
    context = r.choice([
        f"The {svc} team asked for a single rule on {topic}; each module had its own.",
        f"Incidents in the {r.choice(TEAMS)} area traced back to inconsistent {topic}.",
        f"`{c.module()}` and its neighbours disagreed on {topic}, which made reviews slow.",
    ])
    decision = r.choice([
        f"`{const}` in {svc} is {c.value()}; other services keep their own value and document it.",
        f"We keep {topic} configurable per service; the defaults live beside the code that reads them.",
        f"{topic.capitalize()} follow the library defaults unless an ADR says otherwise.",
        f"New {r.choice(NOUNS)} code reads {topic} settings once at start-up; no reads at import time.",
    ])
    consequence = r.choice(["Reviews check the setting against this record.", "A follow-up removes the old helpers.",
                            f"The {r.choice(TEAMS)} on-call runbook points here.", "Nothing changes for callers."])
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:40]
    text = (f"# ADR-{number:04d}: {title}\n\nStatus: {status}\n\n## Context\n\n{context}\n\n## Decision\n\n"
            f"{decision}\n\n## Consequences\n\n{consequence}\n")
    return f"{ADR_DIR}/{number:04d}-{slug}.md", text, f"docs: add ADR-{number:04d} ({title.lower()})"


def _service_page(c: _Ctx, svc: str) -> tuple[str, str, str]:
    r = c.r
    settings = "\n".join(f"- `{c.const()}`: {c.value()} ({r.choice(['set by ops', 'contract value', 'tuned after load tests', 'default'])})"
                         for _ in range(r.randint(2, 5)))
    text = (f"# {svc}\n\nOwner: {r.choice(TEAMS)} team. {svc} is deployed separately from {c.project} and talks to "
            f"it over HTTP; it has its own settings, listed here for reference only.\n\n## Settings\n\n{settings}\n\n"
            f"## Contacts\n\nAsk in #{svc} before changing anything above.\n")
    return f"docs/services/{svc}.md", text, f"docs: describe the {svc} service"


def _runbook(c: _Ctx, n: int) -> tuple[str, str, str]:
    r = c.r
    noun, topic = r.choice(NOUNS), c.topic()
    title = r.choice([f"{noun.capitalize()} backlog grows", f"Alerts on {topic}", f"{noun.capitalize()} export stalls",
                      f"Slow {noun} lookups", f"Replaying failed {noun} events"])
    steps = "\n".join(f"{i}. " + r.choice([
        f"Check the {r.choice(SERVICES)} dashboard for errors in the last hour.",
        f"Compare `{c.const()}` with the value in the deploy config.",
        f"Look for recent commits touching `{c.module()}`.",
        f"Pause the {r.choice(AREAS)} job, drain the queue, resume.",
        f"Escalate to the {r.choice(TEAMS)} on-call if the rate stays above {c.value()}.",
        f"If users report \"{c.report_word()}\", collect the {noun} ids before restarting anything.",
    ]) for i in range(1, r.randint(3, 6)))
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return f"docs/runbooks/{n:03d}-{slug}.md", f"# Runbook: {title}\n\n{steps}\n", f"docs: runbook for {title.lower()}"


def _design_note(c: _Ctx, n: int) -> tuple[str, str, str]:
    r = c.r
    topic = c.topic()
    body = " ".join(r.choice([
        f"The {r.choice(AREAS)} code keeps {topic} out of the hot path.",
        f"`{c.module()}` owns the rule; callers never re-implement it.",
        f"We measured {c.value()} at the 95th percentile in staging.",
        f"Neighbouring services ({r.choice(SERVICES)}, {r.choice(SERVICES)}) settled on different values.",
        f"Open question: should `{c.const()}` move to configuration?",
    ]) for _ in range(r.randint(3, 6)))
    slug = re.sub(r"[^a-z0-9]+", "-", topic.lower()).strip("-")
    return (f"docs/design/{n:03d}-{slug}.md", f"# Design note: {topic}\n\n{body}\n",
            f"docs: design note on {topic}")


def _next_adr(head: dict[str, str]) -> int:
    numbers = [int(m.group(1)) for p in head if (m := re.match(rf"{ADR_DIR}/(\d+)-", p))]
    return max(numbers, default=0) + 1


def _docs(c: _Ctx, count: int, head: dict[str, str], adr: int) -> list[tuple[str, str, str]]:
    """`count` knowledge files (path, text, commit message), none at an existing path; ADRs from `adr` on."""
    services = [s for s in SERVICES if f"docs/services/{s}.md" not in head]
    c.r.shuffle(services)
    out, taken, n = [], set(head), 0
    while len(out) < count and n < count * 3:
        n += 1
        kind = c.r.choices(["adr", "service", "runbook", "design"], [5, 1 if services else 0, 2, 2])[0]
        if kind == "adr":
            made = _clean_doc(c, lambda a=adr: _adr(c, a, a + c.r.randint(1, 30)))
            adr += made is not None
        elif kind == "service":
            made = _clean_doc(c, lambda s=services.pop(): _service_page(c, s))
        elif kind == "runbook":
            made = _clean_doc(c, lambda k=n: _runbook(c, k))
        else:
            made = _clean_doc(c, lambda k=n: _design_note(c, k))
        if made is not None and made[0] not in taken:
            taken.add(made[0])
            out.append(made)
    return [_existing_successor(c, doc, adr - 1) for doc in out]


_SUPERSEDED_BY = re.compile(r"^(# ADR-(\d+): [^\n]*\n\nStatus: )Superseded by ADR-(\d+)$", re.M)


def _existing_successor(c: _Ctx, doc: tuple[str, str, str], last: int) -> tuple[str, str, str]:
    """`doc` whose "Superseded by" names an ADR that exists: a successor drawn past the last ADR
    added (`last`) becomes one of the ADRs after it (the draw's distance folded into their range),
    and the last ADR, which has none, is Deprecated; every placement gets the same ADRs."""
    path, text, msg = doc
    m = _SUPERSEDED_BY.search(text)
    if m is None or int(m.group(3)) <= last:
        return doc
    number = int(m.group(2))
    status = (f"Superseded by ADR-{number + 1 + (int(m.group(3)) - number - 1) % (last - number):04d}"
              if last > number else "Deprecated")
    fixed = text[:m.start()] + m.group(1) + status + text[m.end():]
    return path, fixed if not find_tokens(fixed, c.avoid) else text.replace(m.group(0), m.group(1) + "Deprecated"), msg


def _clean_doc(c: _Ctx, make: Callable[[], tuple[str, str, str]]) -> tuple[str, str, str] | None:
    for _ in range(25):
        doc = make()
        if not any(find_tokens(part, c.avoid) for part in doc):
            return doc
    return None


# --- notes -------------------------------------------------------------------------------------


def _preference(c: _Ctx) -> str:
    r = c.r
    body = r.choice([
        f"Name {r.choice(NOUNS)} helpers after what they return, not how they compute it.",
        f"In `{c.module()}` keep the public signature stable; {r.choice(SERVICES)} imports it.",
        f"`{c.const()}` in {r.choice(SERVICES)} is {c.value()}; that is their setting, don't copy it here.",
        f"Don't log {r.choice(NOUNS)} payloads at INFO: they can hold customer data.",
        f"Prefer a named constant over a literal for {c.topic()}; say where the value comes from.",
        f"Tests for {c.topic()} should use an injected clock, never sleep.",
        f"Please split refactors from behaviour changes, even small ones like {c.topic()}.",
        f"Keep {r.choice(AREAS)} code free of network calls; pass the data in.",
        f"When you touch {c.topic()}, say in the commit message which ADR you followed.",
        f"The {r.choice(TEAMS)} team reviews anything that changes {c.topic()}; tag them.",
        f"Return early on invalid {r.choice(NOUNS)} input instead of nesting the happy path.",
        f"Avoid boolean flags that change {r.choice(NOUNS)} behaviour; add a second function.",
        f"Bug reports that say \"{c.report_word()}\" usually come from {r.choice(SERVICES)}; ask which one first.",
    ])
    return f"- (review of #{r.randint(140, 2400)}) {body}"


def _past_fix(c: _Ctx) -> str:
    r = c.r
    noun, svc = r.choice(NOUNS), r.choice(SERVICES)
    title, symptom, fix = r.choice([
        (f"{noun.capitalize()} totals off by one", f"the {r.choice(AREAS)} report counted the last {noun} twice",
         "the loop bound was inclusive; made it exclusive and added a regression test"),
        (f"{svc} timeouts surfaced as 500s", f"callers saw server errors whenever {svc} was slow",
         f"mapped the client timeout to a 503 and kept `{c.const()}` as configured"),
        ("Setting read at import time", f"overriding `{c.const()}` in tests had no effect",
         "read the setting when the function runs, not when the module loads"),
        (f"Duplicate {noun} events", f"the {r.choice(AREAS)} job replayed {_plural(noun)} after a restart",
         f"made the handler idempotent on the {noun} id"),
        (f"Wrong value copied from {svc}", f"a change copied {svc}'s `{c.const()}` ({c.value()}) into this repo",
         "reverted; each service keeps its own documented value"),
        (f"Flaky {c.topic()} test", "a test failed on the CI machines only",
         "the test depended on dict order; compared sorted lists instead"),
        (f"Slow {noun} lookups", f"lookups in `{c.module()}` scanned every {noun}", "added an index keyed by id"),
        (f"\"{c.report_word().capitalize()}\" reported by {svc}", f"{svc} users reported {_plural(noun)} that "
         f"looked {c.report_word()}", f"the cause was in {svc} itself; nothing changed here"),
        (f"{noun.capitalize()} rounding in exports", f"exported {noun} amounts differed from the UI by a cent",
         "formatted from the stored decimal, not from a float"),
    ])
    return f"## {title}\nSymptom: {symptom}. Fix: {fix}."


def _plural(noun: str) -> str:
    return noun[:-1] + "ies" if noun.endswith("y") else noun + ("es" if noun.endswith(("s", "x", "ch")) else "s")


_ENTRY_START = {PREFERENCES: ("- ", "* "), PAST_FIXES: ("## ", "# ")}


def _insert_entries(text: str, new: list[str], start: tuple[str, ...], key: str) -> str:
    """`text` (a header, then entries separated by blank lines) with `new` entries around its own.

    Each of the file's own entries goes to a slot among the new ones drawn from its own text, so
    the slots of the distractors do not depend on whether the fact's entry is there (the placement):
    the files of two placements differ by that entry alone. Never inside an entry, never before the
    header.
    """
    cuts = [m.start() + 2 for m in re.finditer(r"\n\n", text) if text.startswith(start, m.start() + 2)]
    if not cuts:
        return text.rstrip("\n") + "\n\n" + "\n\n".join(new) + "\n"
    pieces = [text[a:b].strip("\n") for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    head, own = pieces[0], pieces[1:]
    slots = {n: random.Random(f"{key}:slot:{entry}").randint(0, len(new)) for n, entry in enumerate(own)}
    ordered = [(n, 0, e) for n, e in enumerate(new)] + [(slots[n], -1, e) for n, e in enumerate(own)]
    return "\n\n".join([head, *(e for *_, e in sorted(ordered, key=lambda t: (t[0], t[1])))]) + "\n"


# --- near-miss facts ---------------------------------------------------------------------------


def near_miss_candidates(gen: Any, variant: int, count: int, key: str) -> list[Any]:
    """Up to `count` candidates of the family's space that its draw can never produce."""
    space = getattr(gen, "space", None)
    if not count or space is None or not hasattr(gen, "tell"):
        return []
    drawable = [v for v, _ in space.draw]
    try:
        drawn = set(drawable)
        pool = [v for v in space.values() if v not in drawn]
    except TypeError:  # unhashable facts: compared one by one
        pool = [v for v in space.values() if all(v != d for d in drawable)]
    r = random.Random(f"{key}:near-miss")
    return r.sample(pool, min(count, len(pool)))


@dataclass(frozen=True)
class _NearMiss:
    """The memory a near-miss candidate yields, framed so it is never current for this module."""

    docs: list[tuple[str, str]]
    notes: dict[str, list[str]]
    messages: list[str]


def _entries(entries: Any) -> list[tuple[str, str]]:
    return [entries] if isinstance(entries, tuple) else list(entries or [])


def _near_miss(c: _Ctx, gen: Any, variant: int, candidates: list[Any], first_adr: int) -> _NearMiss:
    docs: list[tuple[str, str]] = []
    notes: dict[str, list[str]] = {PREFERENCES: [], PAST_FIXES: []}
    messages: list[str] = []
    services = c.r.sample(SERVICES, min(len(SERVICES), len(candidates)))
    for i, cand in enumerate(candidates):
        try:
            story = gen.tell(variant, cand)
        except Exception:  # noqa: BLE001 - a candidate the family cannot tell is simply not used
            continue
        svc = services[i % len(services)]
        superseded = i % 2 == 0
        for source in ("K", "F", "X"):
            for path, entry in _entries(story.fact_entries.get(source)):
                text = _frame(c, source, path, entry, svc, superseded, first_adr + len(docs))
                if text is None or find_tokens(text[1], c.avoid):
                    continue
                if source == "K":
                    docs.append(text)
                else:
                    notes.setdefault(text[0], []).append(text[1])
        msg = domain_words(story.intro_msg_fact)
        framed = (f"{svc}: note the upstream decision for reference\n\nQuoted from the {svc} repository "
                  f"(deployed separately; its value is not ours):\n\n" + "\n".join("> " + line for line in msg.splitlines()))
        if superseded:
            framed = ("note a superseded decision (kept for history)\n\nAn early version of this setting said:\n\n"
                      + "\n".join("> " + line for line in msg.splitlines()) + "\n\nThat value was dropped later.")
        if msg and not find_tokens(framed, c.avoid):
            messages.append(framed)
    return _NearMiss(docs, notes, messages)


def _frame(c: _Ctx, source: str, path: str, entry: str, svc: str, superseded: bool,
           adr: int) -> tuple[str, str] | None:
    """A near-miss entry as a superseded record or a neighbouring service's note."""
    body = domain_words(re.sub(r"^\s*(?:[-*]\s+)?(?:\([^)]*\)\s*)?", "", entry.strip()))
    if source == "K":
        if superseded:
            return (f"{ADR_DIR}/{adr:04d}-superseded-setting.md",
                    f"# ADR-{adr:04d}: An earlier setting\n\nStatus: Superseded (no longer in force; kept for "
                    f"history)\n\n{body}\n")
        return (f"docs/neighbours/{svc}.md", f"# Notes from the {svc} team\n\n{svc} is a neighbouring service, "
                f"deployed separately from {c.project} with its own values. From its handbook:\n\n{body}\n")
    if source == "F":
        who = "superseded by a later review" if superseded else f"about {svc}, a neighbouring service, not {c.project}"
        return path, f"- (review of #{c.r.randint(20, 139)}, {who}) {body}"
    lines = domain_words(entry.strip()).splitlines()
    title = lines[0].lstrip("# ").strip() if lines and lines[0].startswith("#") else "An earlier fix"
    rest = "\n".join(lines[1:]) if lines and lines[0].startswith("#") else entry.strip()
    tail = ("Later reverted: the value above is no longer current." if superseded
            else f"This was in {svc}, which is deployed separately; its value does not apply to {c.project}.")
    return path, f"## {title} ({'superseded' if superseded else 'in ' + svc})\n{rest}\n{tail}"


# --- the fact in the domain's words --------------------------------------------------------------

_IDENT = re.compile(r"`?\b([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b`?(\s*=\s*)?")
_MODULE = re.compile(r"`?\b([a-z][a-z0-9_]*)\.py\b`?")


def _words(ident: str) -> str:
    return " ".join(p for p in ident.lower().split("_") if p)


def domain_words(text: str) -> str:
    """`text` with code identifiers told in words (`MAX_RUN = 2` -> `max run: 2`, `refunds.py` ->
    `the refunds module`)."""
    text = _MODULE.sub(lambda m: f"the {_words(m.group(1))} module", text)
    return _IDENT.sub(lambda m: _words(m.group(1)) + (": " if m.group(2) else ""), text)


def _rephrase_lines(text: str, tokens: tuple[str, ...]) -> str:
    """`text` with each fact-bearing line in domain words, where its fact tokens survive that."""
    out = []
    for line in text.split("\n"):
        if find_tokens(line, tokens):
            told = domain_words(line)
            line = told if find_tokens(told, tokens) else line
        out.append(line)
    return "\n".join(out)


def in_domain_words(spec: TaskSpec) -> TaskSpec:
    """`spec` with its fact-bearing item (designated source only) in the domain's words."""
    tokens = tuple(spec.fact_tokens)
    if spec.source not in ("H", "K", "F", "X") or not tokens:
        return spec
    commits = []
    for commit in spec.commits:
        message, files = commit.message, dict(commit.files)
        if spec.source == "H" and find_tokens(message, tokens):
            message = _rephrase_lines(message, tokens)
        for path, text in files.items():
            if text is not None and artifact_kind(path) == spec.source and find_tokens(text, tokens):
                files[path] = _rephrase_lines(text, tokens)
        commits.append(Commit(message, files))
    return replace(spec, commits=tuple(commits))


# --- the whole task ----------------------------------------------------------------------------


def _package(spec: TaskSpec, head: dict[str, str]) -> str:
    for path in sorted(spec.oracle_files):
        if "/" in path:
            return path.split("/", 1)[0]
    tops = sorted({p.split("/", 1)[0] for p in head if "/" in p and p.endswith(".py") and not p.startswith("tests")})
    return tops[0] if tops else "internal"


def scale_key(family: str, variant: int, scale: Scale) -> str:
    """The key every draw of a scaled variant derives from (never the placement)."""
    return f"scale:{family}:{variant}:{scale.label}"


@functools.lru_cache(maxsize=4)
def _filler(active_salt: str | None, vocab: FillerVocab, key: str, modules: int, commits: int,
            avoid: tuple[str, ...]) -> Filler:
    """The scaled history's filler, built once per variant and process: every placement of a
    variant (and rule 6's second build) shares it, since it is a pure function of these arguments
    (`make_filler`'s determinism is tested on its own); `active_salt` keeps fresh sets apart."""
    return make_filler(vocab, key, modules, commits, avoid=avoid, redraw_attempts=6)


def enlarge(spec: TaskSpec, scale: Scale, gen: Any = None) -> TaskSpec:
    """`spec` with the memory of `scale` added (unchanged at the default scale); see the module doc."""
    if scale.is_default:
        return spec
    key = scale_key(spec.family, spec.variant, scale)
    spec = in_domain_words(spec)
    head = head_tree(spec)
    pkg = _package(spec, head)
    c = _context(spec, head, key, pkg)
    adr = _next_adr(head)
    near = _near_miss(c, gen, spec.variant, near_miss_candidates(gen, spec.variant, scale.near_miss, key), adr)
    docs = _docs(c, scale.docs, head, adr + len(near.docs))
    docs_at_start = [d for d in docs if c.r.random() < 0.3]
    doc_commits = [Commit(msg, {path: text}) for path, text, msg in docs if (path, text, msg) not in docs_at_start]

    extra = max(0, scale.commits - len(spec.commits) - len(doc_commits))
    filler_commits: list[Commit] = []
    initial: dict[str, str] = {}
    if extra:
        areas = tuple(a for a in AREAS if not any(p.startswith(f"{pkg}/{a}/") for p in head))
        vocab = FillerVocab(pkg, NOUNS, NUMBERS, LABELS, areas)
        filler = _filler(salt(), vocab, key, max(12, min(150, extra // 16)), extra, c.avoid)
        initial = {p: t for p, t in filler.files.items() if p != FILLER_TEST and p not in head}
        filler_commits = list(filler.commits)
    # Near-miss messages ride on filler commits (their diffs are ordinary changes).
    for msg in near.messages:
        if filler_commits:
            i = c.r.randrange(len(filler_commits))
            filler_commits[i] = Commit(msg, filler_commits[i].files)
    extras = list(filler_commits)
    for commit in doc_commits:
        extras.insert(c.r.randint(0, len(extras)), commit)

    base = dict(spec.commits[0].files)
    base.update(initial)
    base.update({p: t for p, t, _ in docs_at_start})
    base.update({p: t for p, t in near.docs if p not in base})
    for path, start in _ENTRY_START.items():
        if path not in base:
            continue
        make = _preference if path == PREFERENCES else _past_fix
        new = [e for e in (c.clean(lambda m=make: m(c)) for _ in range(scale.notes)) if e]
        new += near.notes.get(path, [])
        base[path] = _insert_entries(base[path], new, start, f"{key}:{path}")

    original = list(spec.commits)
    gaps = len(original) - 1
    cuts = sorted(c.r.randint(0, len(extras)) for _ in range(max(0, gaps - 1)))
    chunks = [extras[a:b] for a, b in zip([0, *cuts], [*cuts, len(extras)], strict=True)] if gaps else []
    commits = [Commit(original[0].message, base)]
    for i, commit in enumerate(original[1:]):
        commits += chunks[i] if i < len(chunks) else []
        commits.append(commit)
    if gaps == 0:
        commits += extras
    return replace(spec, commits=tuple(commits), tags=(*spec.tags, scale_tag(scale)))
