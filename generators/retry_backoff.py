"""retry-backoff: a job scheduler's retry delays grow without bound.

A failed job is retried after base x factor^(attempt-1) seconds, capped. The refactor at HEAD
reset the factor to 2 and dropped the cap, so a job that keeps failing is parked for days. The
repro only asks that a retry never waits more than an hour, which the conventional "double it,
cap at five minutes" also gives. The fact has two parts drawn per variant: a growth factor that
is not 2 and a cap that is not a round number of minutes; hidden tests check both.
Exploration-heavy: the rule is one module of a package padded with filler (size knob:
`GENERATOR.build_sized`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sdebench.generation.facts import accepted, space
from sdebench.generation.family import Family
from sdebench.generation.kit import FillerVocab, Story, pick
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.sized import SizedStory

FAMILY = "retry-backoff"
BASE_SECONDS = 2
SIZES = {0: "default", 1: "default"}
FACTORS = ("1.3", "1.4", "1.6", "1.7", "1.8", "2.2", "2.3", "2.4", "2.6", "2.7")
ROUND_CAPS = tuple(range(60, 1201, 60)) + (150, 450, 750, 1000)

# The subpackage (among filler ones) that holds the rule module, per shape.
HOMES = {0: "workers", 1: "executors"}


@dataclass(frozen=True)
class Shape:
    """Names that differ between variants."""

    package: str
    rule_module: str
    vocab: FillerVocab


SHAPES = {
    0: Shape("jobrunner", "backoff", FillerVocab(
        "jobrunner", ("job", "worker", "queue", "lease", "schedule", "run"),
        ("duration_s", "attempts_used", "priority", "queue_depth"), ("owner", "pool", "kind", "cron_expr"),
        ("workers", "leases", "dashboards", "history", "triggers", "quotas", "hooks", "calendars"))),
    1: Shape("batchq", "retry_policy", FillerVocab(
        "batchq", ("task", "executor", "slot", "window", "pipeline", "step"),
        ("runtime_s", "failures", "weight", "backlog"), ("tenant", "cluster", "category", "trigger"),
        ("executors", "slots", "planner", "audit_log", "notifications", "calendar", "limits", "status"))),
}


def drawable_cap(cap: int) -> bool:
    """Whether the draw may pick a cap of `cap` s: not a multiple of 5, more than 3 s off round caps."""
    return bool(cap % 5) and all(abs(cap - c) > 3 for c in ROUND_CAPS)


def tenths(k: int) -> str:
    """A factor as written in the code: one decimal."""
    return f"{k / 10:.1f}"


# The draw: uniform over every (factor, cap) pair of FACTORS x the drawable caps of 131..169 s.
DRAWN = [(f, cap) for f in FACTORS for cap in accepted(131, 169, drawable_cap)]
# Conventional rules first (doubling, 1.5x or tripling, capped at round minutes), then every pair of
# one-decimal factors 1.2..2.8 and caps 128..172 s (the draw's ranges and their neighbours).
SPACE = space(
    [(tenths(k), cap) for k in (20, 15, 30) for cap in (300, 600, 60, 120, 900, 1800, 3600)],
    DRAWN,
    [(tenths(k), cap) for k in range(12, 29) for cap in range(128, 173)],
)


def fact_rule(variant: int) -> tuple[str, int]:
    """(growth factor, cap in seconds): a factor other than 2 and a cap of 131..169 s, not round."""
    return pick(f"{FAMILY}-rule-{variant}", DRAWN)


def tokens(factor: str, cap: int) -> tuple[str, ...]:
    """Every spelling that would reveal either part of the rule."""
    m, s = divmod(cap, 60)
    return (factor, f"x{factor}", f"{factor}x", f"×{factor}", f"{factor}^", str(cap), f"{m}m{s}s",
            f"{m} min {s}", f"{m} minutes {s}", f"{m}:{s:02d}", f"{cap / 60:.2f} min")


def rule_module(factor: str, cap: str, jitter: bool) -> str:
    """The backoff rule; `jitter` is the refactor's optional jitter hook (HEAD shape)."""
    extra = ", jitter=None" if jitter else ""
    jit = "    if jitter is not None:\n        delay = jitter(delay)\n" if jitter else ""
    return f'''"""Backoff between retries of a failed job."""

BASE_DELAY_SECONDS = {BASE_SECONDS}
# Growth of the delay from one retry to the next, and the longest delay (None: no limit).
BACKOFF_FACTOR = {factor}
MAX_DELAY_SECONDS = {cap}


def retry_delay(attempt{extra}):
    """Seconds to wait before retry number `attempt` (1-based)."""
    if attempt < 1:
        raise ValueError(f"attempt is 1-based, got {{attempt}}")
    delay = BASE_DELAY_SECONDS * BACKOFF_FACTOR ** (attempt - 1)
    if MAX_DELAY_SECONDS is not None:
        delay = min(delay, MAX_DELAY_SECONDS)
{jit}    return delay
'''


def scheduler_module(dotted: str) -> str:
    """The public scheduler: records failures and decides when a job runs next."""
    return f'''"""A tiny scheduler: jobs run, fail, and are retried later."""

from dataclasses import dataclass

from {dotted} import retry_delay


@dataclass
class Job:
    """A job and its retry state."""

    name: str
    failures: int = 0
    next_run: float = 0.0


class Scheduler:
    """Keeps jobs and their next run time; the clock is injected."""

    def __init__(self, clock):
        self.clock = clock
        self.jobs = {{}}

    def add(self, name):
        """Register a job that may run now."""
        self.jobs[name] = Job(name, next_run=self.clock())
        return self.jobs[name]

    def record_failure(self, name):
        """Note a failed run of `name` and schedule its retry; return the delay in seconds."""
        job = self.jobs[name]
        job.failures += 1
        delay = retry_delay(job.failures)
        job.next_run = self.clock() + delay
        return delay

    def record_success(self, name):
        """Note a successful run: the retry state resets."""
        job = self.jobs[name]
        job.failures = 0
        job.next_run = self.clock()

    def due(self):
        """Names of the jobs whose next run time has come, sorted."""
        now = self.clock()
        return sorted(j.name for j in self.jobs.values() if j.next_run <= now)
'''


def story(variant: int, rule: tuple[str, int]) -> Story:
    """The story of one variant whose (factor, cap) is `rule`, without its filler (see SIZED)."""
    s = SHAPES[variant % 2]
    factor, cap = rule
    pkg, mod, dotted = SIZED.layout(variant, s.rule_module)
    imp = f"from {pkg}.scheduler import Scheduler\n"
    clock = "\n\nclass Clock:\n    def __init__(self):\n        self.now = 0.0\n\n    def __call__(self):\n        return self.now\n"
    base_tests = f'''{imp}{clock}

def test_new_job_is_due():
    sched = Scheduler(Clock())
    sched.add("nightly")
    assert sched.due() == ["nightly"]


def test_failed_job_waits():
    sched = Scheduler(Clock())
    sched.add("nightly")
    assert sched.record_failure("nightly") > 0
    assert sched.due() == []


def test_first_retry_waits_the_base_delay():
    sched = Scheduler(Clock())
    sched.add("nightly")
    assert sched.record_failure("nightly") == {BASE_SECONDS}


def test_success_resets():
    clock = Clock()
    sched = Scheduler(clock)
    sched.add("nightly")
    sched.record_failure("nightly")
    sched.record_success("nightly")
    assert sched.due() == ["nightly"]
'''
    repro = f'''{imp}{clock}

def test_retry_never_waits_more_than_an_hour():
    # Reported: a job that failed overnight was parked for days before its next try.
    sched = Scheduler(Clock())
    sched.add("sync")
    delays = [sched.record_failure("sync") for _ in range(30)]
    assert max(delays) <= 3600
    assert delays == sorted(delays)
'''
    # Expected delays only right of each assert (dropped from the held-out observation tests).
    schedule = [min(BASE_SECONDS * float(factor) ** i, cap) for i in range(40)]
    hidden = f'''import pytest

{imp}{clock}

def failures(n):
    sched = Scheduler(Clock())
    sched.add("sync")
    return [sched.record_failure("sync") for _ in range(n)]


def test_hidden_growth_between_retries():
    assert failures(3) == pytest.approx({schedule[:3]!r})


def test_hidden_cap():
    assert failures(40)[-1] == pytest.approx({cap})


def test_hidden_whole_schedule():
    assert failures(40) == pytest.approx({schedule!r})


def test_hidden_schedule_in_milliseconds():
    assert [round(seconds * 1000) for seconds in failures(40)] == {[round(d * 1000) for d in schedule]!r}
'''
    m, sec = divmod(cap, 60)
    return Story(
        package=pkg,
        module=mod,
        **rule_versions(lambda fc, later: rule_module(*fc, jitter=later), (factor, str(cap)), ("2", "None"),
                        ("2", "300")),
        base_files=package_files(pkg, f"{pkg}: schedules jobs and retries the failed ones.",
                                 f"# {pkg}\n\nRuns jobs on schedule and retries failures with backoff.\n",
                                 {f"{pkg}/scheduler.py": scheduler_module(dotted),
                                  "tests/test_scheduler.py": base_tests}),
        repro_tests={"tests/test_repro_retry_delay.py": repro},
        hidden_tests={"tests/test_hidden_backoff.py": hidden},
        tags=("scheduler", "backoff", "multi-part-rule", "large-repo"),
        **prose(f"""
        -- statement
        A job that failed a few dozen times overnight was not retried for days: each retry waits longer than
        the last, with no end. tests/test_repro_retry_delay.py shows it. Please make retries behave as they
        are supposed to.
        -- fact
        Retry delays grow by a factor of {factor} per retry and are capped at {cap} seconds.
        -- conventional_guess
        BACKOFF_FACTOR = 2, MAX_DELAY_SECONDS = 300 (double, capped at five minutes)
        -- intro_msg_fact
        {s.rule_module}: exponential retry backoff (x{factor}, capped at {cap} s)

        Growth {factor} per retry and a {cap} s ceiling keep retries inside the upstream maintenance window.
        -- intro_msg_plain
        {s.rule_module}: exponential retry backoff
        -- refactor_msg
        {s.rule_module}: optional jitter hook; simplify defaults
        -- K docs/adr/0005-failed-jobs.md
        Backoff: each retry waits BACKOFF_FACTOR = {factor} times the previous delay (starting at
        {BASE_SECONDS} s), capped at MAX_DELAY_SECONDS = {cap} ({m} min {sec} s), so retries stay inside the
        upstream maintenance window without hammering it. This supersedes ADR-0003.
        -- F
        - (review of #405, on-call) Backoff grows by {factor}x per retry, not 2x, and is capped at {cap} s.
        Please don't normalise these to 'nicer' numbers again.
        -- X
        ## Stuck retries in the export worker
        Symptom: the sibling export worker retried failed uploads days later. Fix: its backoff had no cap;
        restored growth x{factor} and MAX_DELAY_SECONDS = {cap}, the platform-wide rule.
        -- docs/adr/0005-failed-jobs.md
        # ADR-0005: Failed jobs

        Status: Accepted

        A failed job is retried by the scheduler, never by the job itself; every retry is logged with the job
        name and the attempt number.
        -- docs/adr/0003-retry-backoff.md
        # ADR-0003: Retry backoff

        Status: Superseded

        Double the delay after each failure and cap it at 300 s, five minutes (BACKOFF_FACTOR = 2,
        MAX_DELAY_SECONDS = 300). Superseded after the upstream outage review.
        -- docs/adr/0004-job-leases.md
        # ADR-0004: Job leases

        Status: Accepted

        A worker holds a job lease for 90 s and renews it every 30 s.
        -- docs/CONVENTIONS.md
        - Times are floats of seconds from an injected clock; never call time.time() in logic.
        -- docs/CONVENTIONS.md
        - Job names are lowercase with dashes; they are unique per scheduler.
        -- .agent/preferences.md
        - (review of #377) A success must reset the failure count, even after many retries.
        -- .agent/preferences.md
        - (review of #390) Keep jitter optional; tests need deterministic delays.
        -- .agent/past_fixes.md
        ## Jobs ran twice after a deploy
        Symptom: duplicate runs. Fix: the lease was not renewed across restarts; persist it.
        """),
    )


SIZED = SizedStory.shaped(FAMILY, story, SHAPES, HOMES, sizes=SIZES, avoid=lambda v: tokens(*fact_rule(v)),
                          tokens=lambda v, rule: tokens(*rule))
GENERATOR = Family(FAMILY, "exploration-heavy", "a job scheduler's two-part retry backoff rule: a growth "
                   "factor other than 2 and a delay cap that is not a round number of minutes",
                   variants=(0, 1), draw=fact_rule, tell=SIZED.tell, tell_sized=SIZED.tell_sized, space=SPACE)
