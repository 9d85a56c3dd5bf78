"""ttlcache: quotes from an upstream provider must be cached for an unconventional TTL.

The cache expires entries after 120 s; the repro only checks that a quote survives 150 s, which
the conventional TTLs (300 s, 3600 s) also satisfy. Hidden tests probe one second either side of
the real TTL, drawn per variant from values no convention would produce.
"""

from __future__ import annotations

from sdebench.generation.facts import draw_integer, integer_space
from sdebench.generation.family import Family
from sdebench.generation.kit import Story
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose

FAMILY = "ttlcache"
HEAD_TTL = 120
REPRO_AGE = 150
SWEEP = 1000  # the held-out reads every second below this
CONVENTIONAL = (60, 90, 120, 180, 240, 300, 360, 420, 450, 480, 540, 600, 720, 900, 1200, 1800, 3600)


def drawable(ttl: int) -> bool:
    """Whether the draw may return `ttl`: not a multiple of 5 and far from round minutes."""
    return bool(ttl % 5) and all(abs(ttl - c) > 3 for c in CONVENTIONAL)


def fact_ttl(variant: int) -> int:
    """The TTL of a variant: 301..899 s, drawable."""
    return draw_integer(f"{FAMILY}-ttl-{variant}", 301, 899, drawable)


# Every conventional TTL, then every second of 296..904 (the draw's range and its neighbours).
SPACE = integer_space(CONVENTIONAL, 301, 899, drawable, margin=5)


def tokens(ttl: int) -> tuple[str, ...]:
    """Every spelling that would reveal the TTL."""
    m, s = divmod(ttl, 60)
    return (str(ttl), f"{m}m{s}s", f"{m} min {s}", f"{m} minutes {s}", f"{m}:{s:02d}", f"{ttl / 60:.2f} min")


SHAPES = {0: ("ratecache", "fx quotes", "quote"), 1: ("geocache", "geocoding answers", "answer")}


def config_module(ttl_line: str, extra: bool) -> str:
    """The settings module; `extra` is the refactor's added setting."""
    text = f'''"""Settings of the cache."""

# Time-to-live of a cached entry, in seconds.
{ttl_line}
MAX_ENTRIES = 10_000
'''
    if extra:
        text += "EVICT_BATCH = 100  # entries dropped at once when the cache is full\n"
    return text


def cache_module(pkg: str) -> str:
    """The cache module (unchanged by the bug)."""
    return f'''"""A small TTL cache with an injected clock."""

from {pkg} import config


class TTLCache:
    """Maps keys to values that expire `ttl` seconds after they were set."""

    def __init__(self, clock, ttl=None):
        self.clock = clock
        self.ttl = config.DEFAULT_TTL_SECONDS if ttl is None else ttl
        self._data = {{}}

    def set(self, key, value):
        """Store `value` under `key`, stamped with the current time."""
        self._data[key] = (self.clock(), value)

    def get(self, key, default=None):
        """The value under `key`, or `default` when absent or expired."""
        item = self._data.get(key)
        if item is None:
            return default
        stamp, value = item
        if self.clock() - stamp >= self.ttl:
            del self._data[key]
            return default
        return value

    def __len__(self):
        return len(self._data)
'''


def tell(variant: int, ttl: int) -> Story:
    """The story of one variant whose TTL is `ttl`."""
    pkg, what, item = SHAPES[variant]
    head_line = f"DEFAULT_TTL_SECONDS = {HEAD_TTL}"
    fact_line = f"DEFAULT_TTL_SECONDS = {ttl}"
    clock = "class Clock:\n    def __init__(self):\n        self.now = 0.0\n\n    def __call__(self):\n        return self.now\n"
    base_tests = f'''from {pkg}.cache import TTLCache


{clock}

def test_missing_key_gives_default():
    assert TTLCache(Clock()).get("nope", 7) == 7


def test_fresh_entry_is_returned():
    clock = Clock()
    cache = TTLCache(clock)
    cache.set("k", "v")
    clock.now = 1
    assert cache.get("k") == "v"


def test_explicit_ttl_wins():
    clock = Clock()
    cache = TTLCache(clock, ttl=10)
    cache.set("k", "v")
    clock.now = 10
    assert cache.get("k") is None
'''
    repro = f'''from {pkg}.cache import TTLCache


{clock}

def test_{item}_survives_{REPRO_AGE}_seconds():
    # Reported: {what} vanish from the cache after two minutes, so we hit the provider far too often.
    clock = Clock()
    cache = TTLCache(clock)
    cache.set("k", "v")
    clock.now = {REPRO_AGE}
    assert cache.get("k") == "v"
'''
    # Held-out checks read the entry at every second up to SWEEP (past every drawable TTL and its
    # neighbours) and every 97 s of the first hour, so no input singles out the TTL (the fact);
    # expected values only right of each assert.
    alive = list(range(1, min(ttl, SWEEP)))
    hidden = f'''from {pkg} import config
from {pkg}.cache import TTLCache


{clock}

def read_at(seconds):
    clock = Clock()
    cache = TTLCache(clock)
    cache.set("k", "v")
    clock.now = seconds
    return cache.get("k")


def test_hidden_alive_until_expiry():
    assert [t for t in range(1, {SWEEP}) if read_at(t) == "v"] == {alive!r}


def test_hidden_gone_after_expiry(observe):
    observe([read_at(t) for t in range(1, 3600, 97)])


def test_hidden_setting():
    assert config.DEFAULT_TTL_SECONDS == {ttl}
'''
    m, s = divmod(ttl, 60)
    return Story(
        package=pkg,
        module=f"{pkg}/config.py",
        **rule_versions(lambda line, later: config_module(line, extra=later), fact_line, head_line,
                        "DEFAULT_TTL_SECONDS = 300", first_wrong=f"DEFAULT_TTL_SECONDS = {HEAD_TTL + 60}"),
        base_files=package_files(pkg, f"{pkg}: a cache for {what}.",
                                 f"# {pkg}\n\nCaches {what} from the upstream "
                                 "provider.\n",
                                 {f"{pkg}/cache.py": cache_module(pkg), "tests/test_cache.py": base_tests}),
        repro_tests={"tests/test_repro_expiry.py": repro},
        hidden_tests={"tests/test_hidden_ttl.py": hidden},
        fact_tokens=tokens(ttl),
        tags=("caching", "magic-number"),
        **prose(f"""
        -- statement
        Cached {what} disappear after about two minutes, so every request goes back to the provider and we are
        being throttled. tests/test_repro_expiry.py reproduces it. Please fix the cache.
        -- fact
        Cached {what} live exactly {ttl} seconds (the provider's guarantee).
        -- conventional_guess
        DEFAULT_TTL_SECONDS = 300 (five minutes)
        -- intro_msg_fact
        config: cache entries for {ttl} s

        The provider guarantees each of its {what} for {ttl} seconds; caching longer serves stale data,
        shorter trips its rate limit.
        -- intro_msg_plain
        config: add cache settings
        -- refactor_msg
        config: add eviction batch size; tune defaults
        -- K docs/CONVENTIONS.md
        - Caching: the upstream provider guarantees its {what} for exactly {ttl} s; DEFAULT_TTL_SECONDS must
        equal that, never longer (stale data) nor shorter (rate limits).
        -- F
        - (review of #77, ops) The cache TTL is not a round number: it is {ttl} seconds ({m} min {s} s), the
        provider's guarantee. Don't 'fix' it to five minutes or an hour.
        -- X
        ## Provider rate-limit errors
        Symptom: 429s from the provider at peak. Fix: the sibling service's cache used the wrong TTL; set it
        to the provider's {ttl} s, as everywhere here.
        -- docs/adr/0003-cache-ttl.md
        # ADR-0003: Cache lifetime

        Status: Superseded

        Cached entries lived 300 s (five minutes), a round default chosen before the provider contract.
        Superseded; do not use.
        -- docs/adr/0004-eviction.md
        # ADR-0004: Eviction

        Status: Accepted

        When the cache is full, the oldest entries are evicted in batches.
        -- docs/CONVENTIONS.md
        - HTTP: client timeouts are 7 s connect, 20 s read; retries back off 1, 2, 4 s.
        -- docs/CONVENTIONS.md
        - Sessions expire after 1800 s of inactivity; this is unrelated to the data caches.
        -- .agent/preferences.md
        - (review of #64) Inject clocks; never call time.time() inside cache logic.
        -- .agent/past_fixes.md
        ## Cache grew without bound
        Symptom: memory climbed overnight. Fix: enforce MAX_ENTRIES on set.
        """),
    )


GENERATOR = Family(FAMILY, "knowledge-missing", "the time-to-live the upstream provider guarantees for "
                   "cached entries (a non-round number of seconds)", variants=(0, 1), draw=fact_ttl,
                   tell=tell, space=SPACE)
