import pytest

from sdebench.generation.prose import prose, unwrap
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES

SHEET = """
        -- statement
        Cached quotes vanish after two minutes,
        so we are throttled.
        -- fact
        Quotes live 417 s.
        -- intro_msg_fact
        config: cache for 417 s

        The provider guarantees
        417 seconds.
        -- K docs/adr/0005-cache.md
        Decision: cache quotes for 417 s.
        -- F
        - (review of #77, ops) The TTL is 417 s.
        -- X
        ## Provider rate limits
        Symptom: 429s at peak. Fix: set the
        TTL to 417 s.
        -- docs/adr/0005-cache.md
        # ADR-0005: Caching

        Status: Accepted

        Quotes are cached
        per provider.
        -- docs/CONVENTIONS.md
        - Inject clocks.
        -- docs/CONVENTIONS.md
        - Sessions expire after 1800 s.
        """


def test_a_sheet_fills_the_story_fields():
    got = prose(SHEET)
    assert got["statement"] == "Cached quotes vanish after two minutes, so we are throttled."
    assert got["fact"] == "Quotes live 417 s."
    assert got["intro_msg_fact"] == "config: cache for 417 s\n\nThe provider guarantees 417 seconds."
    assert got["fact_entries"] == {
        "K": ("docs/adr/0005-cache.md", "Decision: cache quotes for 417 s."),
        "F": (PREFERENCES, "- (review of #77, ops) The TTL is 417 s."),
        "X": (PAST_FIXES, "## Provider rate limits\nSymptom: 429s at peak. Fix: set the TTL to 417 s."),
    }
    assert got["distractors"] == [
        ("docs/adr/0005-cache.md", "# ADR-0005: Caching\n\nStatus: Accepted\n\nQuotes are cached per provider."),
        ("docs/CONVENTIONS.md", "- Inject clocks."),
        ("docs/CONVENTIONS.md", "- Sessions expire after 1800 s."),
    ]


def test_a_fact_told_in_parts_keeps_one_entry_per_section():
    got = prose("-- F\n- part one\n-- F\n- part two\n-- K docs/CONVENTIONS.md\n- one\n")
    assert got["fact_entries"] == {"F": [(PREFERENCES, "- part one"), (PREFERENCES, "- part two")],
                                   "K": ("docs/CONVENTIONS.md", "- one")}


def test_unwrap_joins_paragraph_lines_and_keeps_headings():
    assert unwrap(["# Title", "body one", "body two", "", "", "next"]) == "# Title\nbody one body two\n\nnext"


@pytest.mark.parametrize("sheet,error", [
    ("-- statment\nhello\n", "unknown section '-- statment'"),
    ("-- src/app.py\nhello\n", "unknown section '-- src/app.py'"),
    ("stray\n-- fact\nx\n", "text before the first section"),
    ("-- K\nx\n", "K names its artifact file"),
    ("-- F .agent/preferences.md\nx\n", "K names its artifact file"),
    ("-- fact\n\n-- statement\nx\n", "section '-- fact' is empty"),
    ("-- fact\nx\n-- fact\ny\n", "appears twice"),
    ("-- docs/adr/0004-cache.md\n# ADR-0005: Cache\n", "holds ADR-0005 in the file of ADR-0004"),
    ("    -- fact\n  x\n", "indented less than the sheet"),
    ("  -- fact\n  x\n -- statement\n  y\n", "not at the sheet's indentation"),
])
def test_a_malformed_sheet_is_a_one_line_error(sheet, error):
    with pytest.raises(ValueError, match=error.replace("(", r"\(")):
        prose(sheet)


def test_a_placeholder_rendering_empty_at_a_line_edge_is_an_error():
    empty = ""
    assert prose(f"-- fact\nby {empty} order\n")["fact"] == "by  order"  # inside a line: kept as written
    with pytest.raises(ValueError, match="placeholder at a line's edge"):
        prose(f"-- fact\nby {empty}\norder\n")
