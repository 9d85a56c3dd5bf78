"""search-prefix: how long an index term is, decided by a text normaliser below the search index.

The repro searches the index (index), which splits text with the analyser (analyze), which runs
every word through the normaliser (normalize); the rule lives there. Terms are folded and cut to
a fixed prefix so spelling variants meet; at HEAD the prefix is far too short and unrelated words
collide. The house rule has two parts: a light stemmer strips three suffixes (of seven it could
know) before the cut, and the prefix length is a number no convention suggests (210 rules are
drawn from). The repro only checks that two words with a short common start no longer collide,
which indexing whole words also fixes; hidden tests probe words that share exactly the prefix, or
one character less, and a word per suffix.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from sdebench.generation.facts import space
from sdebench.generation.family import Family
from sdebench.generation.kit import Story, pick_distinct
from sdebench.generation.parts import package_files, state_versions
from sdebench.generation.prose import prose
from sdebench.generation.spec import Commit

FAMILY = "search-prefix"
HEAD_LEN = 4
# Prefix lengths no convention suggests (8, 10, 12, 16 excluded); at least 6 so that 'cartoon' and
# 'cartography' (which share five letters) part, at most 14 so that the British/American spellings
# of 'internationalisation' (which differ at the 15th letter) meet.
LENGTHS = {6: "six", 7: "seven", 9: "nine", 11: "eleven", 13: "thirteen", 14: "fourteen"}
# Suffixes a light stemmer may strip before the cut; the house stemmer strips three of them.
SUFFIXES = ("s", "es", "ed", "er", "ly", "ing", "ment")
STEMS = tuple(tuple(c) for c in combinations(SUFFIXES, 3))
MIN_STEM = 3  # a suffix is stripped only when at least this many letters remain
ALPHABET = "qwertyuiopasdfghjklzxcvbnm"
# One word per suffix (and 'boxes', which tells -es from -s), for the held-out checks.
PROBE_WORDS = ("lamps", "boxes", "jumped", "painter", "quickly", "running", "payment", "red", "sing")


@dataclass(frozen=True)
class Shape:
    """What differs between variants: names, and the term rule (the fact)."""

    project: str
    package: str
    things: str  # what is indexed
    length: int | None  # the prefix kept; None: whole words
    suffixes: tuple[str, ...]  # stripped before the cut, in SUFFIXES order


def fact_rule(variant: int) -> tuple[int, tuple[str, ...]]:
    """The term rule of a variant: (prefix length, suffixes stripped), drawn independently."""
    length = pick_distinct(f"{FAMILY}-length", sorted(LENGTHS), 2)[variant]
    return length, pick_distinct(f"{FAMILY}-suffixes", list(STEMS), 2)[variant]


# Whole words or a round prefix, no stemming, first; then every drawable rule (an unconventional
# length with any three suffixes); then the neighbours: any length of 5..16 without stemming, and
# whole words with any three suffixes stripped.
SPACE = space([(None, ()), (8, ()), (10, ()), (12, ()), (16, ())],
              [(k, st) for k in sorted(LENGTHS) for st in STEMS],
              [(k, ()) for k in range(5, 17)] + [(None, st) for st in STEMS])
NAMES = {0: ("findit", "findit", "catalogue items"), 1: ("doclens", "doclens", "help articles")}


def shape(variant: int, rule: tuple[int | None, tuple[str, ...]]) -> Shape:
    """The names of a variant whose term rule is `rule`."""
    length, suffixes = rule
    return Shape(*NAMES[variant], length, tuple(x for x in SUFFIXES if x in suffixes))


def stripped(s: Shape) -> str:
    """The stripped suffixes in prose: -s, -ly and -ing."""
    items = [f"-{x}" for x in s.suffixes]
    return ", ".join(items[:-1]) + f" and {items[-1]}" if len(items) > 1 else "".join(items) or "nothing"


def tokens(s: Shape) -> tuple[str, ...]:
    """Every spelling that would reveal the length or the suffix set."""
    k = s.length
    w = LENGTHS.get(k, str(k))
    out = (str(k), w, f"{w} characters", f"{w} letters", f"[:{k}]", f"prefix_len = {k}")
    order = sorted(s.suffixes, key=lambda x: (-len(x), x))
    return out + (stripped(s), ", ".join(s.suffixes), repr(tuple(order)), repr(s.suffixes),
                  ", ".join(f'"{x}"' for x in order), " ".join(f"-{x}" for x in s.suffixes))


def normalize(s: Shape, state: str, helper: bool) -> str:
    """The normaliser; state is correct, buggy, conventional or oracle."""
    right = state in ("correct", "oracle")
    cut = s.length if right else (HEAD_LEN if state == "buggy" else None)
    suffixes = tuple(sorted(s.suffixes, key=lambda x: (-len(x), x))) if right else ()
    lines = ['"""Normalise words into index terms: fold case and accents, strip suffixes, keep a prefix."""', "",
             "import unicodedata", ""]
    if cut is not None:
        lines += [f"PREFIX_LEN = {cut}"]
    lines += [f"SUFFIXES = {suffixes!r}  # longest first", f"MIN_STEM = {MIN_STEM}",
              "", "", "def fold(word):", '    """Lower-case `word` and strip accents."""',
              '    decomposed = unicodedata.normalize("NFKD", word.casefold())',
              '    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))',
              "", "", "def stem(word):",
              '    """`word` without the first of SUFFIXES it ends with, if MIN_STEM letters remain."""',
              "    for suffix in SUFFIXES:", "        if word.endswith(suffix) and len(word) - len(suffix) >= MIN_STEM:",
              "            return word[:-len(suffix)]", "    return word",
              "", "", "def normalize_term(word):", '    """The index term of one word."""']
    lines += ["    return stem(fold(word))" + ("" if cut is None else "[:PREFIX_LEN]")]
    if helper:
        lines += ["", "", "def same_term(a, b):", '    """Whether two words meet in the index."""',
                  "    return normalize_term(a) == normalize_term(b)"]
    return "\n".join(lines) + "\n"


def analyze(pkg: str) -> str:
    """The analyser: text to terms."""
    return f'''"""Split text into index terms."""

import re

from {pkg}.normalize import normalize_term

WORD = re.compile(r"[^\\W\\d_]+", re.UNICODE)
STOPWORDS = frozenset({{"a", "an", "and", "the", "of", "for", "to", "in", "with"}})


def words(text):
    """The alphabetic words of `text`, stopwords removed."""
    return [w for w in WORD.findall(text) if w.casefold() not in STOPWORDS]


def terms(text):
    """The distinct index terms of `text`, in order of first appearance."""
    return list(dict.fromkeys(normalize_term(w) for w in words(text)))
'''


def index(pkg: str) -> str:
    """The index: the public entry point."""
    return f'''"""An in-memory inverted index with AND queries."""

from {pkg}.analyze import terms


class Index:
    """Documents by id, searchable by their terms."""

    def __init__(self):
        self.postings = {{}}
        self.docs = {{}}

    def add(self, doc_id, text):
        """Index `text` under `doc_id` (re-adding replaces the old text)."""
        if doc_id in self.docs:
            self.remove(doc_id)
        self.docs[doc_id] = text
        for term in terms(text):
            self.postings.setdefault(term, set()).add(doc_id)

    def remove(self, doc_id):
        """Drop a document from the index."""
        for term in terms(self.docs.pop(doc_id)):
            self.postings[term].discard(doc_id)

    def search(self, query):
        """Ids of the documents containing every term of `query`."""
        wanted = terms(query)
        if not wanted:
            return set()
        result = set(self.postings.get(wanted[0], set()))
        for term in wanted[1:]:
            result &= self.postings.get(term, set())
        return result
'''


def tell(variant: int, rule: tuple[int | None, tuple[str, ...]]) -> Story:
    """The story of one variant whose term rule is `rule` (prefix length, suffixes stripped)."""
    s = shape(variant, rule)
    pkg, k = s.package, s.length
    base_tests = f'''from {pkg}.analyze import terms, words
from {pkg}.index import Index
from {pkg}.normalize import fold


def test_fold_strips_accents_and_case():
    assert fold("Crème BRÛLÉE") == "creme brulee"


def test_stopwords_removed():
    assert words("The art of war") == ["art", "war"]


def test_terms_are_distinct():
    assert len(terms("red red red")) == 1


def test_search_and_query():
    idx = Index()
    idx.add(1, "red lamp")
    idx.add(2, "blue lamp")
    assert idx.search("lamp") == {{1, 2}}
    assert idx.search("red lamp") == {{1}}
    assert idx.search("the") == set()


def test_accents_do_not_matter():
    idx = Index()
    idx.add(1, "Café table")
    assert idx.search("cafe") == {{1}}


def test_readd_replaces():
    idx = Index()
    idx.add(1, "red lamp")
    idx.add(1, "green chair")
    assert idx.search("lamp") == set()
'''
    repro = f'''from {pkg}.index import Index


def test_cartoon_does_not_find_cartography():
    # Reported: searching "cartoon" also returns the cartography atlas.
    idx = Index()
    idx.add("atlas", "Cartography atlas")
    idx.add("stickers", "Cartoon stickers")
    assert idx.search("cartoon") == {{"stickers"}}
'''
    # Held-out checks try every prefix length and a word per suffix, so no input singles out the real
    # rule (the fact); expected values only right of each assert (dropped from the observation tests).
    hidden = f'''from {pkg}.index import Index
from {pkg}.normalize import normalize_term

ALPHABET = "{ALPHABET}"


def test_hidden_spelling_variants_meet():
    idx = Index()
    idx.add("uk", "Internationalisation guide")
    idx.add("us", "Internationalization guide")
    assert idx.search("internationalization") == {{"uk", "us"}}


def test_hidden_term_length():
    assert normalize_term(ALPHABET) == "{ALPHABET[:k]}"


def test_hidden_suffixes_stripped(observe):
    observe([normalize_term(w) for w in {PROBE_WORDS!r}])


def test_hidden_words_sharing_a_prefix(observe):
    for n in range(3, 21):
        idx = Index()
        idx.add(1, ALPHABET[:n] + "alpha")
        observe(idx.search(ALPHABET[:n] + "omega"))
'''
    w, strip = LENGTHS.get(k, str(k)), stripped(s)
    filler_files = {
        f"{pkg}/highlight.py": '"""Highlight query words in a snippet."""\n\n\ndef highlight(text, word):\n'
        '    """`text` with case-insensitive matches of `word` wrapped in asterisks."""\n'
        '    import re\n\n    return re.sub(re.escape(word), lambda m: f"*{m.group(0)}*", text, flags=re.I)\n',
        "tests/test_highlight.py": f"from {pkg}.highlight import highlight\n\n\ndef test_highlight():\n"
        '    assert highlight("Red lamp", "red") == "*Red* lamp"\n',
    }
    return Story(
        package=pkg,
        module=f"{pkg}/normalize.py",
        **state_versions(normalize, s),
        base_files=package_files(pkg, f"{s.project}: search over {s.things}.",
                                 f"# {s.project}\n\nFast in-process search over {s.things}.\n",
                                 {f"{pkg}/analyze.py": analyze(pkg), f"{pkg}/index.py": index(pkg),
                                  "tests/test_search.py": base_tests}),
        repro_tests={"tests/test_repro_false_match.py": repro},
        hidden_tests={"tests/test_hidden_terms.py": hidden},
        filler=[Commit("highlight: mark query words in snippets", filler_files)],
        fact_tokens=tokens(s),
        tags=("search", "text-normalisation"),
        project=s.project,
        **prose(f"""
        -- statement
        Search over {s.things} returns nonsense: looking for "cartoon" also brings up the cartography atlas,
        and other short queries match unrelated words that merely start the same way.
        tests/test_repro_false_match.py reproduces it.
        -- fact
        Index terms are the first {k} characters of the folded word, after stripping the suffixes {strip} when
        at least {MIN_STEM} letters remain.
        -- conventional_guess
        index whole folded words (no prefix cut, no stemming)
        -- intro_msg_fact
        normalize: fold words and keep a prefix

        Terms are the first {k} characters of the folded word with {strip} stripped, so spelling variants and
        inflections meet in the index.
        -- intro_msg_plain
        normalize: fold words and keep a prefix
        -- refactor_msg
        normalize: add same_term helper; tidy constants
        -- K docs/CONVENTIONS.md
        - Search: index terms are the first {k} characters of the folded word once the suffixes {strip} are
        stripped (only when at least {MIN_STEM} letters remain), so British and American spellings and most
        inflections meet. Queries go through the same normaliser.
        -- F
        - (review of #702, catalogue team) Index terms keep {w} characters of the folded word, no more and no
        fewer, after stripping {strip} (never a stem under {MIN_STEM} letters); we tuned that against real
        queries.
        -- X
        ## Autocomplete missed spelling variants
        Symptom: {pkg}/suggest.py did not offer 'colour' for 'color' words. Fix: strip the
        suffixes {strip} (leaving at least {MIN_STEM} letters) and cut suggestion keys to the index prefix
        of {k} characters after folding, as the normaliser does.
        -- docs/adr/0005-search.md
        # ADR-0005: In-process search

        Status: Accepted

        Search is an in-memory inverted index rebuilt at start-up; queries are AND of their terms.
        -- docs/adr/0003-term-prefix.md
        # ADR-0003: Index terms

        Status: Superseded

        Terms were whole folded words, without any prefix cut. Superseded by later search work.
        -- docs/adr/0004-stopwords.md
        # ADR-0004: Stopwords

        Status: Accepted

        A short English stopword list is removed before indexing; it is not configurable.
        -- docs/CONVENTIONS.md
        - Text is folded with NFKD and combining marks are dropped; case-folding, not lower().
        -- docs/CONVENTIONS.md
        - Document ids are opaque; the index never parses them.
        -- .agent/preferences.md
        - (review of #688) No regex per query in hot paths; compile patterns at import time.
        -- .agent/preferences.md
        - (review of #694) Digits are not indexed; SKUs have their own lookup.
        -- .agent/past_fixes.md
        ## Removing a document left stale postings
        Symptom: deleted items were still found. Fix: re-analyse the stored text on removal and discard the id
        from each posting.
        """),
    )


GENERATOR = Family(FAMILY, "multi-hop", "the term rule of a text normaliser two calls below search: the "
                   "suffixes it strips and the length of the prefix it keeps", variants=(0, 1),
                   draw=fact_rule, tell=tell, space=SPACE)
