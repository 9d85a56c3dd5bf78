"""backoff-policy: retries wait on a geometric schedule with a house multiplier and a hard cap.

Two-value fact, drawn jointly: the growth multiplier (two decimals in 1.31..1.59, not 1.5, not
sqrt(2)) and the cap in seconds (17..33, not a round number). HEAD doubles and caps at ten minutes, so late retries stall; the
repro only requires the tenth retry within a minute, which doubling with a 30 s cap satisfies.
Hidden tests pin the multiplier on early retries and the cap on late ones; the whole schedule
in milliseconds tells every candidate pair apart.
"""

from __future__ import annotations

from dataclasses import dataclass

from sdebench.generation.facts import accepted, space
from sdebench.generation.family import Family
from sdebench.generation.kit import Story, pick
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.spec import Commit

FAMILY = "backoff-policy"
HEAD_MULT, HEAD_CAP = "2.0", "600.0"
CONV_MULT, CONV_CAP = "2.0", "30.0"
ROUND_CAPS = (20, 30, 40, 45, 50, 60)


@dataclass(frozen=True)
class Shape:
    """What differs between variants: the domain and names."""

    project: str
    package: str
    module: str
    driver: str  # the module that retries
    what: str  # what is retried
    base: str  # first delay, seconds (visible in code, not part of the fact)


SHAPES = {
    0: Shape("hookrelay", "hookrelay", "backoff", "deliver", "webhook deliveries", "0.5"),
    1: Shape("syncagent", "syncagent", "retry", "push", "sync pushes", "0.25"),
}


def drawable_multiplier(hundredths: int) -> bool:
    """Whether the draw may pick a multiplier of `hundredths`/100: not x.x0/x.x5, not sqrt(2), phi, sqrt(3)."""
    return bool(hundredths % 5) and hundredths not in (141, 162, 173)


def drawable_cap(cap: int) -> bool:
    """Whether the draw may pick a cap of `cap` seconds: not a multiple of 5, off the round caps by 2+."""
    return bool(cap % 5) and all(abs(cap - r) > 1 for r in ROUND_CAPS)


def multiplier(hundredths: int) -> str:
    """The multiplier as written in the code: two decimals."""
    return f"{hundredths / 100:.2f}"


# The draw: uniform over every (multiplier, cap) pair it accepts (23 multipliers x 10 caps).
DRAWN = [(multiplier(h), cap) for h in accepted(131, 159, drawable_multiplier) for cap in accepted(17, 33, drawable_cap)]
# Conventional pairs first (doubling, 1.5x or tripling with round caps), then every pair of the
# draw's ranges and their neighbours, drawable or not (1.28..1.62 x 15..35 s).
SPACE = space(
    [(multiplier(h), cap) for h in (200, 150, 300) for cap in (30, 60, 10, 20, 45, 120, 300, 600)],
    DRAWN,
    [(multiplier(h), cap) for h in range(128, 163) for cap in range(15, 36)],
)


def fact_of(variant: int) -> tuple[str, int]:
    """The multiplier as text (e.g. '1.37') and the cap in whole seconds."""
    return pick(f"{FAMILY}-fact-{variant}", DRAWN)


def rule_module(s: Shape, mult: str, cap: str, schedule: bool) -> str:
    """The backoff module; `schedule` adds the refactor's schedule() helper."""
    text = f'''"""Backoff between retries of {s.what}: a geometric series with a ceiling."""

BASE_DELAY = {s.base}  # seconds before the first retry
MULTIPLIER = {mult}
MAX_DELAY = {cap}  # seconds


def delay(retry: int) -> float:
    """Seconds to wait before retry number `retry` (the first retry is 1)."""
    if retry < 1:
        raise ValueError(f"retry numbers start at 1, got {{retry}}")
    return min(BASE_DELAY * MULTIPLIER ** (retry - 1), MAX_DELAY)
'''
    if schedule:
        text += '''

def schedule(retries: int) -> list[float]:
    """The delays before each of `retries` retries."""
    return [delay(n) for n in range(1, retries + 1)]
'''
    return text


def driver_module(s: Shape) -> str:
    """The retrying caller (unchanged by the bug)."""
    return f'''"""Send with retries: failures are retried after the backoff delay."""

from {s.package}.{s.module} import delay


class GaveUp(RuntimeError):
    """Raised when every attempt failed."""


def {s.driver}(send, payload, sleep, retries: int = 8):
    """Call send(payload) until it succeeds, sleeping between attempts; its result."""
    for attempt in range(retries + 1):
        try:
            return send(payload)
        except ConnectionError:
            if attempt == retries:
                raise GaveUp(f"gave up after {{retries}} retries") from None
            sleep(delay(attempt + 1))
'''


def tokens(mult: str, cap: int) -> tuple[str, ...]:
    """Every spelling that would reveal the multiplier or the cap."""
    pct = int(round(float(mult) * 100))
    return (mult, mult.replace(".", ","), f"{pct}%", f"{pct} %", str(cap), f"{cap}.0")


def tell(variant: int, fact: tuple[str, int]) -> Story:
    """The story of one variant whose (multiplier, cap) is `fact`."""
    s = SHAPES[variant]
    mult, cap = fact
    m, b = float(mult), float(s.base)
    pkg = s.package
    base_tests = f'''import pytest

from {pkg}.{s.driver} import GaveUp, {s.driver}
from {pkg}.{s.module} import BASE_DELAY, delay


class Flaky:
    def __init__(self, failures):
        self.failures = failures

    def __call__(self, payload):
        if self.failures:
            self.failures -= 1
            raise ConnectionError("down")
        return "ok"


def test_first_retry_waits_the_base_delay():
    assert delay(1) == BASE_DELAY


def test_retry_numbers_start_at_one():
    with pytest.raises(ValueError):
        delay(0)


def test_succeeds_after_failures():
    sleeps = []
    assert {s.driver}(Flaky(2), "p", sleeps.append) == "ok"
    assert len(sleeps) == 2 and sleeps[0] == BASE_DELAY


def test_gives_up():
    with pytest.raises(GaveUp):
        {s.driver}(Flaky(99), "p", lambda seconds: None, retries=3)
'''
    repro = f'''from {pkg}.{s.module} import delay


def test_late_retries_do_not_stall():
    # Reported: after a few failures {s.what} wait for minutes between attempts.
    assert delay(10) <= 60
'''
    # Whole milliseconds: an exact observation that tells every candidate apart.
    millis = [round(min(b * m ** n, float(cap)) * 1000) for n in range(40)]
    hidden = f'''import pytest

from {pkg}.{s.module} import delay, schedule


def test_hidden_growth_second_retry():
    assert delay(2) == pytest.approx({b * m!r})


def test_hidden_growth_third_retry():
    assert delay(3) == pytest.approx({b * m * m!r})


def test_hidden_ceiling():
    assert delay(40) == pytest.approx({float(cap)!r})


def test_hidden_schedule_head():
    assert schedule(3) == pytest.approx([{b!r}, {b * m!r}, {b * m * m!r}])


def test_hidden_schedule_in_milliseconds():
    assert [round(seconds * 1000) for seconds in schedule(40)] == {millis!r}
'''
    return Story(
        package=pkg,
        module=f"{pkg}/{s.module}.py",
        **rule_versions(lambda mc, later: rule_module(s, *mc, schedule=later), (mult, f"{cap}.0"),
                        (HEAD_MULT, HEAD_CAP), (CONV_MULT, CONV_CAP)),
        base_files=package_files(pkg, f"{s.project}: reliable {s.what}.",
                                 f"# {s.project}\n\nRetries {s.what} with "
                                 "backoff.\n",
                                 {f"{pkg}/{s.driver}.py": driver_module(s),
                                  "tests/test_driver.py": base_tests}),
        repro_tests={"tests/test_repro_stall.py": repro},
        hidden_tests={"tests/test_hidden_backoff.py": hidden},
        filler=[Commit("readme: describe the retry loop", {
            "README.md": f"# {s.project}\n\nRetries {s.what} with backoff. Only connection errors are retried.\n"})],
        fact_tokens=tokens(mult, cap),
        tags=("networking", "retry", "multi-part-rule"),
        project=s.project,
        **prose(f"""
        -- statement
        After a short outage of a receiver, our {s.what} took ages to recover: the logs show the client
        sleeping for minutes between attempts, and receivers dropped us in the meantime.
        tests/test_repro_stall.py captures it.
        -- fact
        Retry delays grow by a factor of {mult} per retry and are capped at {cap} seconds.
        -- conventional_guess
        MULTIPLIER = {CONV_MULT}, MAX_DELAY = {CONV_CAP}
        -- intro_msg_fact
        {s.module}: back off between retries

        Delays grow by {mult}x per retry and are capped at {cap} s: receivers drop idle subscriptions after
        that.
        -- intro_msg_plain
        {s.module}: back off between retries
        -- refactor_msg
        {s.module}: add schedule(); align constants with the client library
        -- K docs/CONVENTIONS.md
        - Retries: delays grow by a factor of {mult} per retry, starting at the base delay, and never
        exceed {cap} s (the receivers' idle timeout).
        -- F
        - (review of #412, platform) Backoff here is not doubling: multiply by {mult} each retry and cap every
        wait at {cap} seconds. Receivers drop idle subscriptions after that.
        -- X
        ## Health checks flapped after an outage
        Symptom: the poller waited minutes between checks and subscribers timed out. Fix: poller.py now backs
        off by {mult}x per retry with a {cap} s ceiling, like every retry loop in this codebase.
        -- docs/adr/0003-backoff.md
        # ADR-0003: Retry backoff

        Status: Superseded

        Retries doubled the delay and waited at most {int(float(CONV_CAP))} s. Superseded after the receivers
        changed their timeouts; do not follow it.
        -- docs/adr/0004-idempotency.md
        # ADR-0004: Idempotent receivers

        Status: Accepted

        Every payload carries an idempotency key, so a retry after a lost reply is harmless.
        -- docs/CONVENTIONS.md
        - Only connection errors are retried; a rejected payload (4xx) is never retried.
        -- docs/CONVENTIONS.md
        - Sleeping goes through an injected `sleep` so tests never wait.
        -- .agent/preferences.md
        - (review of #388) No jitter in unit tests; keep schedules deterministic.
        -- .agent/preferences.md
        - (review of #395) Log each retry at INFO with the attempt number.
        -- .agent/past_fixes.md
        ## Retry storm after deploy
        Symptom: every worker retried at once. Fix: stagger worker start-up; the backoff itself was fine.
        """),
    )


GENERATOR = Family(FAMILY, "knowledge-missing", "the backoff growth multiplier and the ceiling on any "
                   "single retry delay (two values)", variants=(0, 1), draw=fact_of, tell=tell, space=SPACE)
