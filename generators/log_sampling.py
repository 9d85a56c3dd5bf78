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
from sdebench.generation.kit import (
    ADR_DIR,
    CONVENTIONS,
    Filler,
    FillerVocab,
    Story,
    filler_size,
    make_filler,
)
from sdebench.generation.seeded import per_set_cache
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES

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


@per_set_cache
def filler_of(variant: int, size: str | tuple[int, int]) -> Filler:
    """The variant's filler at `size`; it avoids the drawn fact's tokens, whatever candidate is told."""
    modules, commits = filler_size(size)
    return make_filler(SHAPES[variant % 2].vocab, f"{FAMILY}-{variant}", modules, commits,
                       avoid=tokens(fact_one_in(variant)), include=(HOMES[variant % 2],))


def tell(variant: int, n: int) -> Story:
    """The story of one variant (at its named size, see SIZES) keeping one debug record in `n`."""
    return tell_sized(variant, n, SIZES.get(variant, "default"))


def tell_sized(variant: int, n: int, size: str | tuple[int, int]) -> Story:
    """The story of one variant with filler of `size`: a name in FILLER_SIZES or (modules, commits)."""
    s = SHAPES[variant % 2]
    toks = tokens(n)
    filler = filler_of(variant, size)
    pkg, home = s.package, filler.packages[0]
    mod = f"{home}/{s.rule_module}.py"
    dotted = mod.removesuffix(".py").replace("/", ".")
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
    fact_k = (f"{ADR_DIR}/0006-debug-sampling.md", f"# ADR-0006: Debug log sampling\n\nStatus: Accepted\n\n"
              f"Supersedes ADR-0004. Debug records are sampled per logger: keep 1 in {n} "
              f"(DEBUG_KEEP_ONE_IN = {n}, about {pct}). The count was sized to the ingest quota with "
              f"headroom for bursts; warnings and above are never sampled.")
    fact_f = (PREFERENCES, f"- (review of #318, observability) Debug sampling must keep one in {n} per "
              f"logger. Not 1 in 100: that still overflows the quota at peak.")
    fact_x = (PAST_FIXES, f"## Ingest quota exceeded by the metrics agent\nSymptom: the sibling metrics agent "
              f"shipped too many debug lines and was throttled. Fix: its sampler kept too many; set "
              f"DEBUG_KEEP_ONE_IN to {n}, the value all our shippers use.")
    distractors = [
        (f"{ADR_DIR}/0004-debug-sampling.md", "# ADR-0004: Debug log sampling\n\nStatus: Superseded by "
         f"ADR-0006\n\nKeep 1 in {CONVENTIONAL_ONE_IN} debug records. Superseded when the ingest quota was cut."),
        (f"{ADR_DIR}/0003-retention.md", "# ADR-0003: Retention\n\nStatus: Accepted\n\nShipped logs are "
         "kept 30 days hot and 13 months cold."),
        (f"{ADR_DIR}/0005-structured-logs.md", "# ADR-0005: Structured logs\n\nStatus: Accepted\n\nRecords "
         "are dicts with at least 'level', 'logger' and 'seq'; free-text messages go in 'msg'."),
        (CONVENTIONS, "- Never sample WARNING, ERROR or CRITICAL records; only DEBUG is sampled."),
        (CONVENTIONS, "- Sinks are list-like objects with append(); tests use plain lists."),
        (PREFERENCES, "- (review of #277) Count dropped records; operators want the ratio on the dashboard."),
        (PAST_FIXES, "## Lost error records on shutdown\nSymptom: the last errors before exit were missing. "
         "Fix: flush the sink in a finally block."),
    ]
    early, late = filler.split()
    return Story(
        package=pkg,
        module=mod,
        v1_correct=rule_module(n, per_logger=False),
        v1_buggy=rule_module(HEAD_ONE_IN * 2, per_logger=False),
        head_buggy=rule_module(HEAD_ONE_IN, per_logger=True),
        oracle=rule_module(n, per_logger=True),
        conventional=rule_module(CONVENTIONAL_ONE_IN, per_logger=True),
        intro_msg_fact=f"{s.rule_module}: sample debug records, keep 1 in {n}\n\nSized to the ingest quota "
        f"(about {pct} of debug volume); warnings and above are never sampled.",
        intro_msg_plain=f"{s.rule_module}: sample debug records before shipping",
        refactor_msg=f"{s.rule_module}: count per logger; tune defaults",
        base_files={
            f"{pkg}/__init__.py": f'"""{pkg}: collects, samples and ships log records."""\n',
            f"{pkg}/shipping.py": shipper_module(s, dotted),
            "tests/test_shipping.py": base_tests,
            "README.md": f"# {pkg}\n\nCollects log records, samples the noisy ones and ships the rest.\n",
            **filler.files,
        },
        repro_tests={"tests/test_repro_debug_volume.py": repro},
        hidden_tests={"tests/test_hidden_sampling.py": hidden},
        fact_entries={"K": fact_k, "F": fact_f, "X": fact_x},
        distractors=distractors,
        filler=early,
        late_filler=late,
        statement=(
            "Our log ingest quota is blown every day and nearly all of it is debug noise: about one debug "
            "line in ten still gets shipped. tests/test_repro_debug_volume.py reproduces it with a single "
            "chatty logger. Please get the debug volume back to what it should be."
        ),
        fact=f"Debug records are sampled per logger, keeping 1 in {n} (DEBUG_KEEP_ONE_IN = {n}).",
        fact_tokens=toks,
        conventional_guess=f"DEBUG_KEEP_ONE_IN = {CONVENTIONAL_ONE_IN} (keep 1%)",
        tags=("logging", "sampling", "magic-number", "large-repo"),
    )


GENERATOR = Family(
    family=FAMILY,
    bottleneck="exploration-heavy",
    description="the N of a log shipper that keeps one debug record in N per logger (a non-round count)",
    variants=(0, 1),
    draw=fact_one_in,
    tell=tell,
    space=SPACE,
    tell_sized=tell_sized,
)
