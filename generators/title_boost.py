"""title-boost: search results rank a page titled after the query below a passing mention.

Documents score by term hits: body hits weigh 1, title hits weigh TITLE_BOOST. The refactor at
HEAD left the boost at 1, so a page whose title matches ties with one mention in a body and
loses the tie-break. The repro only needs the boost to exceed 1, which the conventional 2 (or
1.5) also gives; the real boost is a two-decimal weight drawn per variant, and hidden tests
check scores and orderings that only it produces. Exploration-heavy: the weight is one module of
a package padded with filler (size knob: `GENERATOR.build_sized`).
"""

from __future__ import annotations

from dataclasses import dataclass

from sdebench.generation.facts import accepted, draw_integer, space
from sdebench.generation.family import Family
from sdebench.generation.kit import FillerVocab, Story
from sdebench.generation.parts import package_files, rule_versions
from sdebench.generation.prose import prose
from sdebench.generation.sized import SizedStory

FAMILY = "title-boost"
SIZES = {0: "default", 1: "default", 2: "large"}
ROUND = (1.0, 1.25, 1.5, 1.75, 2.0, 2.5, 3.0)

# The subpackage (among filler ones) that holds the rule module, per shape.
HOMES = {0: "indexing", 1: "ranking"}


@dataclass(frozen=True)
class Shape:
    """Names that differ between variants."""

    package: str
    rule_module: str
    term: str  # the query of the repro
    title: str  # the page titled after it
    vocab: FillerVocab


SHAPES = {
    0: Shape("docsearch", "weights", "refund", "Refund policy", FillerVocab(
        "docsearch", ("document", "shard", "crawl", "synonym", "facet", "snippet"),
        ("click_count", "dwell_ms", "byte_size", "freshness_days"), ("language", "collection", "author", "section"),
        ("crawler", "indexing", "facets", "analytics", "snippets", "spelling", "feeds", "admin"))),
    1: Shape("kbfind", "relevance", "vpn", "VPN setup guide", FillerVocab(
        "kbfind", ("article", "topic", "query_log", "tag", "answer", "vote"),
        ("view_count", "helpful_votes", "char_count", "age_days"), ("product", "locale", "team", "audience"),
        ("articles", "tagging", "votes", "reporting", "imports", "suggest", "moderation", "archive"))),
}


def drawable(hundredths: int) -> bool:
    """Whether the draw may pick a weight of `hundredths`/100: last digit not 0 or 5, off the round weights."""
    return bool(hundredths % 5) and all(abs(hundredths / 100 - r) > 0.04 for r in ROUND)


def weight(hundredths: int) -> str:
    """A weight as written in the code: two decimals."""
    return f"{hundredths / 100:.2f}"


def fact_boost(variant: int) -> str:
    """A two-decimal title weight in 1.11..2.89, drawable."""
    return weight(draw_integer(f"{FAMILY}-boost-{variant}", 111, 289, drawable))


# Round weights first, then every two-decimal weight of 1.06..2.94 (the draw's range and its
# neighbours); the draw is uniform over the drawable ones.
SPACE = space(
    [weight(h) for h in (200, 150, 300, 125, 175, 250, 120, 400, 500, 1000)],
    [weight(h) for h in accepted(111, 289, drawable)],
    [weight(h) for h in range(106, 295)],
)


def tokens(boost: str) -> tuple[str, ...]:
    """Every spelling that would reveal the weight."""
    pct = int(round(float(boost) * 100))
    return (boost, f"{boost}x", f"x{boost}", f"×{boost}", f"{pct}%", f"{pct} %", f"{pct} percent")


def rule_module(boost: str, fields: bool) -> str:
    """The weights module; `fields` is the refactor's per-field table (HEAD shape)."""
    if fields:
        return f'''"""Relevance weights: how much a query term found in each field counts."""

TITLE_BOOST = {boost}
BODY_WEIGHT = 1.0
FIELD_WEIGHTS = {{"title": TITLE_BOOST, "body": BODY_WEIGHT}}


def field_weight(field):
    """Weight of one hit in `field` (unknown fields count zero)."""
    return FIELD_WEIGHTS.get(field, 0.0)
'''
    return f'''"""Relevance weights: how much a query term found in each field counts."""

TITLE_BOOST = {boost}
BODY_WEIGHT = 1.0


def field_weight(field):
    """Weight of one hit in `field` (unknown fields count zero)."""
    if field == "title":
        return TITLE_BOOST
    return BODY_WEIGHT if field == "body" else 0.0
'''


def search_module(dotted: str) -> str:
    """The public search: tokenises, scores and ranks documents."""
    return f'''"""Rank documents for a query by weighted term hits."""

import re

from {dotted} import field_weight

_WORD = re.compile(r"[a-z0-9]+")


def tokenize(text):
    """Lowercase word tokens of `text`."""
    return _WORD.findall(text.lower())


def score(doc, query):
    """Relevance of `doc` (a dict with 'title' and 'body') for `query`."""
    terms = tokenize(query)
    total = 0.0
    for field in ("title", "body"):
        words = tokenize(doc.get(field, ""))
        total += field_weight(field) * sum(words.count(t) for t in terms)
    return total


def search(docs, query):
    """Ids of matching documents, best first; ties go to the smaller id."""
    scored = [(score(d, query), d["id"]) for d in docs]
    return [i for s, i in sorted(scored, key=lambda p: (-p[0], p[1])) if s > 0]
'''


def story(variant: int, boost: str) -> Story:
    """The story of one variant whose title weight is `boost`, without its filler (see SIZED)."""
    s = SHAPES[variant % 2]
    pkg, mod, dotted = SIZED.layout(variant, s.rule_module)
    imp = f"from {pkg}.search import score, search\n"
    t = s.term
    base_tests = f'''{imp}

def test_no_match_is_not_returned():
    assert search([{{"id": "a", "title": "x", "body": "y"}}], "{t}") == []


def test_more_body_hits_rank_higher():
    docs = [{{"id": "a", "title": "", "body": "{t}"}}, {{"id": "b", "title": "", "body": "{t} {t} {t}"}}]
    assert search(docs, "{t}") == ["b", "a"]


def test_ties_go_to_smaller_id():
    docs = [{{"id": "b", "title": "", "body": "{t}"}}, {{"id": "a", "title": "", "body": "{t}"}}]
    assert search(docs, "{t}") == ["a", "b"]


def test_body_hit_scores_one():
    assert score({{"title": "", "body": "{t} here"}}, "{t}") == 1.0
'''
    repro = f'''{imp}

def test_title_match_outranks_passing_mention():
    # Reported: searching "{t}" lists a page that mentions it once below the page titled after it.
    docs = [
        {{"id": "a-faq", "title": "Shipping FAQ", "body": "see {t} rules elsewhere"}},
        {{"id": "b-page", "title": "{s.title}", "body": "how it works"}},
    ]
    assert search(docs, "{t}") == ["b-page", "a-faq"]
'''
    # Held-out checks score and rank a grid of documents (0-3 title hits x 0-9 body hits), so no
    # input singles out the boost (the fact); expected values only right of each assert.
    hidden = f'''import pytest

{imp}
WORD = "{t}"


def doc(title_hits, body_hits):
    return {{"id": f"d{{title_hits}}{{body_hits}}", "title": " ".join([WORD] * title_hits),
            "body": " ".join([WORD] * body_hits)}}


def test_hidden_title_hit_score():
    assert score({{"title": "{t}", "body": ""}}, "{t}") == pytest.approx({boost})


def test_hidden_scores_of_mixed_documents(observe):
    observe([score(doc(a, b), WORD) for a in range(4) for b in range(10)])


def test_hidden_ranking(observe):
    observe(search([doc(a, b) for a in range(4) for b in range(10)], WORD))
'''
    return Story(
        package=pkg,
        module=mod,
        **rule_versions(lambda weight, later: rule_module(weight, fields=later), boost, "1.0", "2.0",
                        first_wrong="1.2"),
        base_files=package_files(pkg, f"{pkg}: full-text search over a small corpus.",
                                 f"# {pkg}\n\nKeyword search with per-field weights.\n",
                                 {f"{pkg}/search.py": search_module(dotted),
                                  "tests/test_search.py": base_tests}),
        repro_tests={"tests/test_repro_ranking.py": repro},
        hidden_tests={"tests/test_hidden_title_weight.py": hidden},
        tags=("search", "ranking", "magic-number", "large-repo"),
        **prose(f"""
        -- statement
        Search relevance got worse: for "{t}", the page titled "{s.title}" now shows up below a page that only
        mentions {t} once in passing. tests/test_repro_ranking.py reproduces it. Please restore the ranking.
        -- fact
        A title hit weighs {boost} body hits (TITLE_BOOST = {boost}).
        -- conventional_guess
        TITLE_BOOST = 2.0 (a title hit counts double)
        -- intro_msg_fact
        {s.rule_module}: weigh title hits {boost}x

        TITLE_BOOST = {boost}, fitted on the click logs.
        -- intro_msg_plain
        {s.rule_module}: per-field relevance weights
        -- refactor_msg
        {s.rule_module}: table of field weights; simplify
        -- K docs/adr/0006-field-weights.md
        Title weight: a query term in the title counts TITLE_BOOST = {boost} body hits. The value was fitted
        on last year's click logs; it is deliberately not a round number. This supersedes ADR-0004.
        -- F
        - (review of #611, search quality) Title hits weigh {boost}, as fitted from the click logs. Please
        don't round it to 2 or 1.5.
        -- X
        ## Help-centre search ranked FAQ mentions first
        Symptom: in the sibling help-centre search, titled pages ranked below passing mentions. Fix: its title
        weight was 1.0; set TITLE_BOOST = {boost}, the fitted value we use everywhere.
        -- docs/adr/0006-field-weights.md
        # ADR-0006: Field weights

        Status: Accepted

        A document's score adds up, over its fields, the query term's hits in the field times the field's
        weight; a document is searched in its title and its body.
        -- docs/adr/0004-title-weight.md
        # ADR-0004: Title weight

        Status: Superseded

        A title hit counts double (TITLE_BOOST = 2.0). Superseded once click logs were available.
        -- docs/adr/0003-tokenizer.md
        # ADR-0003: Tokenizer

        Status: Accepted

        Lowercase ASCII words and digits; no stemming, no stop words.
        -- docs/adr/0005-tie-break.md
        # ADR-0005: Tie-break

        Status: Accepted

        Equal scores are ordered by id so results are stable across runs.
        -- docs/CONVENTIONS.md
        - Weights are floats; a field missing from a document contributes nothing.
        -- docs/CONVENTIONS.md
        - Search returns ids only; the caller loads documents.
        -- .agent/preferences.md
        - (review of #590) Zero-score documents must never be returned.
        -- .agent/past_fixes.md
        ## Accents broke matching
        Symptom: 'café' never matched. Fix: normalise to NFKD and drop combining marks before tokenising.
        """),
    )


SIZED = SizedStory.shaped(FAMILY, story, SHAPES, HOMES, sizes=SIZES, avoid=lambda v: tokens(fact_boost(v)),
                          tokens=lambda v, b: tokens(b))
GENERATOR = Family(FAMILY, "exploration-heavy", "the weight of a title hit relative to a body hit in "
                   "search ranking (a two-decimal, non-round factor)", variants=(0, 1, 2), draw=fact_boost,
                   tell=SIZED.tell, tell_sized=SIZED.tell_sized, space=SPACE)
