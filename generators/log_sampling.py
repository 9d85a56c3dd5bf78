"""log-sampling: a log shipper keeps far too many debug records.

Debug records are sampled before shipping: one in N per logger is kept; warnings and errors are
never dropped. The keep-one-in count was 10 at HEAD. The repro only asks that fewer than 2% of
debug records survive, which the conventional 1 in 100 also gives; hidden tests count exactly
which records survive, with N drawn per variant from counts no convention would pick.
Exploration-heavy: the sampler is one module of a package padded with filler (size knob:
`GENERATOR.build_sized`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sdebench.generation.facts import draw_integer, integer_space
from sdebench.generation.family import Family
from sdebench.generation.kit import FillerVocab, Story
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.sized import SizedStory

FAMILY = "log-sampling"
HEAD_ONE_IN = 10
CONVENTIONAL_ONE_IN = 100
SIZES = {0: "default", 1: "default"}

# The subpackage (among filler ones) that holds the rule module, per shape.
HOMES = {0: "ingest", 1: "buffer"}


@dataclass(frozen=True)
class Shape:
    """Names that differ between variants."""

    package: str
    rule_module: str
    shipper: str  # the public class that ships records
    vocab: FillerVocab


SHAPES = {
    0: Shape("logpipe", "sampling", "Shipper", FillerVocab(
        "logpipe", ("event", "stream", "batch", "span", "source", "sink"),
        ("bytes_in", "line_count", "lag_ms", "retries"), ("service", "host", "level_name", "tenant"),
        ("ingest", "routing", "enrich", "storage", "alerts", "retention", "parsers", "metrics"))),
    1: Shape("tracehub", "throttle", "Forwarder", FillerVocab(
        "tracehub", ("trace", "record", "segment", "agent", "topic", "exporter"),
        ("payload_bytes", "drop_count", "latency_ms", "attempts"), ("app", "node", "severity_name", "team"),
        ("collect", "transform", "buffer", "outputs", "health", "quotas", "codecs", "admin"))),
}
AVOID = (100, 128, 200, 250, 256, 300, 400, 500)


def drawable(n: int) -> bool:
    """Whether the draw may return `n`: not a multiple of 5, more than 3 away from round counts."""
    return bool(n % 5) and all(abs(n - a) > 3 for a in AVOID)


def fact_one_in(variant: int) -> int:
    """Keep one debug record in N: 111..499, drawable."""
    return draw_integer(f"{FAMILY}-one-in-{variant}", 111, 499, drawable)


# Round counts first (1 in 10, 20, 50, 100, ...), then every N of 106..504 (the draw's range and
# its neighbours).
SPACE = integer_space((100, 10, 20, 50, 1000, *AVOID[1:]), 111, 499, drawable, margin=5)


def tokens(n: int) -> tuple[str, ...]:
    """Every spelling that would reveal the sampling count."""
    return (str(n), f"1/{n}", f"1 in {n}", f"one in {n}", f"1-in-{n}", f"{100 / n:.2f}%", f"{100 / n:.3f}%",
            f"{1 / n:.4f}")


def rule_module(one_in: int, per_logger: bool) -> str:
    """The sampler; `per_logger` is the refactor's per-logger counters (HEAD shape)."""
    counter = ("        name = record.get(\"logger\", \"\")\n        seen = self._seen.get(name, 0)\n"
               "        self._seen[name] = seen + 1\n") if per_logger else \
        "        seen = self._seen\n        self._seen += 1\n"
    init = "{}" if per_logger else "0"
    return f'''"""Sampling of low-severity records before they are shipped."""

# Keep one debug record in this many; warnings and above are never sampled.
DEBUG_KEEP_ONE_IN = {one_in}
NEVER_SAMPLED = ("WARNING", "ERROR", "CRITICAL")


class Sampler:
    """Decides, record by record, whether a record is shipped."""

    def __init__(self, one_in=None):
        self.one_in = DEBUG_KEEP_ONE_IN if one_in is None else one_in
        self._seen = {init}

    def keep(self, record):
        """Whether `record` (a dict with 'level' and 'logger') is shipped."""
        level = record.get("level", "INFO")
        if level != "DEBUG":
            return True
{counter}        return seen % self.one_in == 0
'''


def shipper_module(s: Shape, dotted: str) -> str:
    """The public entry point: filters records through the sampler and hands them to a sink."""
    return f'''"""Ship log records to a sink, after sampling."""

from {dotted} import Sampler


class {s.shipper}:
    """Collects records and sends the sampled ones to `sink` (a list-like with append)."""

    def __init__(self, sink, sampler=None):
        self.sink = sink
        self.sampler = sampler or Sampler()
        self.dropped = 0

    def emit(self, record):
        """Ship `record` unless the sampler drops it."""
        if self.sampler.keep(record):
            self.sink.append(record)
        else:
            self.dropped += 1

    def emit_all(self, records):
        """Ship every record of an iterable; return how many were shipped."""
        before = len(self.sink)
        for record in records:
            self.emit(record)
        return len(self.sink) - before
'''


def story(variant: int, n: int) -> Story:
    """The story of one variant keeping one debug record in `n`, without its filler (see SIZED)."""
    s = SHAPES[variant % 2]
    pkg, mod, dotted = SIZED.layout(variant, s.rule_module)
    imp = f"from {pkg}.shipping import {s.shipper}\n"
    helper = ('\n\ndef debug(i, logger="app.db"):\n    return {"level": "DEBUG", "logger": logger, "seq": i}\n')
    base_tests = f'''{imp}{helper}

def test_errors_are_always_shipped():
    sink = []
    {s.shipper}(sink).emit_all({{"level": "ERROR", "logger": "x", "seq": i}} for i in range(700))
    assert len(sink) == 700


def test_info_is_not_sampled():
    sink = []
    {s.shipper}(sink).emit_all({{"level": "INFO", "logger": "x", "seq": i}} for i in range(90))
    assert len(sink) == 90


def test_first_debug_record_is_kept():
    sink = []
    {s.shipper}(sink).emit(debug(0))
    assert sink == [debug(0)]


def test_dropped_are_counted():
    sink = []
    shipper = {s.shipper}(sink)
    shipper.emit_all(debug(i) for i in range(30))
    assert shipper.dropped + len(sink) == 30
'''
    repro = f'''{imp}{helper}

def test_debug_volume_stays_under_quota():
    # Reported: debug logs blow the ingest quota; fewer than 2% of them may be shipped.
    sink = []
    {s.shipper}(sink).emit_all(debug(i) for i in range(1000))
    assert 0 < len(sink) < 20
'''
    # Held-out checks ship batches whose sizes single out no sampling rate; the expected
    # counts and survivors (right of each assert) are recorded from the oracle, not kept here.
    kept = -(-1000 // n)
    survivors = list(range(0, 1100, n))
    hidden = f'''{imp}from {dotted} import DEBUG_KEEP_ONE_IN
{helper}

def test_hidden_exact_volume():
    sink = []
    {s.shipper}(sink).emit_all(debug(i) for i in range(1000))
    assert len(sink) == {kept}


def test_hidden_which_records_survive():
    sink = []
    {s.shipper}(sink).emit_all(debug(i) for i in range(1100))
    assert [r["seq"] for r in sink] == {survivors!r}


def test_hidden_loggers_are_sampled_separately():
    sink = []
    shipper = {s.shipper}(sink)
    shipper.emit_all(debug(i, "a") for i in range(1100))
    shipper.emit(debug(0, "b"))
    assert len(sink) == {len(survivors) + 1}


def test_hidden_setting():
    assert DEBUG_KEEP_ONE_IN == {n}
'''
    pct = f"{100 / n:.2f}%"
    return Story(
        package=pkg,
        module=mod,
        **rule_versions(lambda one_in, later: rule_module(one_in, per_logger=later), n, HEAD_ONE_IN,
                        CONVENTIONAL_ONE_IN, first_wrong=HEAD_ONE_IN * 2),
        base_files=package_files(
            pkg, f"{pkg}: collects, samples and ships log records.",
            f"# {pkg}\n\nCollects log records, samples the noisy ones and ships the rest.\n",
            {f"{pkg}/shipping.py": shipper_module(s, dotted), "tests/test_shipping.py": base_tests}),
        repro_tests={"tests/test_repro_debug_volume.py": repro},
        hidden_tests={"tests/test_hidden_sampling.py": hidden},
        tags=("logging", "sampling", "magic-number", "large-repo"),
        **prose(f"""
        -- statement
        Our log ingest quota is blown every day and nearly all of it is debug noise: about one debug line in
        ten still gets shipped. tests/test_repro_debug_volume.py reproduces it with a single chatty logger.
        Please get the debug volume back to what it should be.
        -- fact
        Debug records are sampled per logger, keeping 1 in {n} (DEBUG_KEEP_ONE_IN = {n}).
        -- conventional_guess
        DEBUG_KEEP_ONE_IN = {CONVENTIONAL_ONE_IN} (keep 1%)
        -- intro_msg_fact
        {s.rule_module}: sample debug records, keep 1 in {n}

        Sized to the ingest quota (about {pct} of debug volume); warnings and above are never sampled.
        -- intro_msg_plain
        {s.rule_module}: sample debug records before shipping
        -- refactor_msg
        {s.rule_module}: count per logger; tune defaults
        -- K docs/adr/0006-log-shipping.md
        Debug sampling: debug records are sampled per logger: keep 1 in {n} (DEBUG_KEEP_ONE_IN = {n}, about
        {pct}). The count was sized to the ingest quota with headroom for bursts; warnings and above are
        never sampled. This supersedes ADR-0004.
        -- F
        - (review of #318, observability) Debug sampling must keep one in {n} per logger. Not 1 in 100: that
        still overflows the quota at peak.
        -- X
        ## Ingest quota exceeded by the metrics agent
        Symptom: the sibling metrics agent shipped too many debug lines and was throttled. Fix: its sampler
        kept too many; set DEBUG_KEEP_ONE_IN to {n}, the value all our shippers use.
        -- docs/adr/0006-log-shipping.md
        # ADR-0006: Log shipping

        Status: Accepted

        Records are shipped in the order they were logged, in batches per logger; a batch that fails is
        retried as a whole so the sink never sees a partial batch.
        -- docs/adr/0004-debug-sampling.md
        # ADR-0004: Debug log sampling

        Status: Superseded

        Keep 1 in {CONVENTIONAL_ONE_IN} debug records. Superseded when the ingest quota was cut.
        -- docs/adr/0003-retention.md
        # ADR-0003: Retention

        Status: Accepted

        Shipped logs are kept 30 days hot and 13 months cold.
        -- docs/adr/0005-structured-logs.md
        # ADR-0005: Structured logs

        Status: Accepted

        Records are dicts with at least 'level', 'logger' and 'seq'; free-text messages go in 'msg'.
        -- docs/CONVENTIONS.md
        - Never sample WARNING, ERROR or CRITICAL records; only DEBUG is sampled.
        -- docs/CONVENTIONS.md
        - Sinks are list-like objects with append(); tests use plain lists.
        -- .agent/preferences.md
        - (review of #277) Count dropped records; operators want the ratio on the dashboard.
        -- .agent/past_fixes.md
        ## Lost error records on shutdown
        Symptom: the last errors before exit were missing. Fix: flush the sink in a finally block.
        """),
    )


SIZED = SizedStory.shaped(FAMILY, story, SHAPES, HOMES, sizes=SIZES, avoid=lambda v: tokens(fact_one_in(v)),
                          tokens=lambda v, n: tokens(n))
GENERATOR = Family(FAMILY, "exploration-heavy", "the N of a log shipper that keeps one debug record in N "
                   "per logger (a non-round count)", variants=(0, 1), draw=fact_one_in, tell=SIZED.tell,
                   tell_sized=SIZED.tell_sized, space=SPACE)
