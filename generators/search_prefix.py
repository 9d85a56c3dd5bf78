"""search-prefix: how long an index term is, decided by a text normaliser below the search index.

The repro searches the index (index), which splits text with the analyser (analyze), which runs
every word through the normaliser (normalize); the rule lives there. Terms are folded and cut to
a fixed prefix so spelling variants meet; at HEAD the prefix is far too short and unrelated words
collide. The house prefix length is a number no convention suggests. The repro only checks that
two words with a short common start no longer collide, which indexing whole words also fixes;
hidden tests probe words that share exactly the prefix, or one character less.
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import dataclass
from pathlib import Path

from sdebench.generation.kit import ADR_DIR, CONVENTIONS, Story, assemble
from sdebench.tasks.artifacts import PAST_FIXES, PREFERENCES


def _helpers():
    name = "sdebench_family__multihop"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name("_multihop.py"))
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


mh = _helpers()

FAMILY = "search-prefix"
HEAD_LEN = 4
# Prefix lengths no convention suggests (8, 10, 12, 16 excluded); at most 14 so that the
# British/American spellings of 'internationalisation' (which differ at the 15th letter) meet.
LENGTHS = {9: "nine", 11: "eleven", 13: "thirteen", 14: "fourteen"}
ALPHABET = "qwertyuiopasdfghjklzxcvbnm"


@dataclass(frozen=True)
class Shape:
    """What differs between variants: names and the drawn prefix length."""

    project: str
    package: str
    things: str  # what is indexed
    length: int


def shape(variant: int) -> Shape:
    """The names and the drawn length of a variant."""
    length = mh.draw_distinct(f"{FAMILY}-length", sorted(LENGTHS), 2)[variant]
    project, package, things = {0: ("findit", "findit", "catalogue items"),
                                1: ("doclens", "doclens", "help articles")}[variant]
    return Shape(project, package, things, length)


def tokens(s: Shape) -> tuple[str, ...]:
    """Every spelling that would reveal the length."""
    k, w = s.length, LENGTHS[s.length]
    return (str(k), w, f"{w} characters", f"{w} letters", f"[:{k}]", f"prefix_len = {k}")


def normalize(s: Shape, state: str, helper: bool) -> str:
    """The normaliser; state is correct, buggy, conventional or oracle."""
    lines = ['"""Normalise words into index terms: fold case and accents, keep a fixed-length prefix."""', "",
             "import unicodedata", ""]
    if state in ("correct", "oracle"):
        lines += [f"PREFIX_LEN = {s.length}"]
    elif state == "buggy":
        lines += [f"PREFIX_LEN = {HEAD_LEN}"]
    lines += ["", "", "def fold(word):", '    """Lower-case `word` and strip accents."""',
              '    decomposed = unicodedata.normalize("NFKD", word.casefold())',
              '    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))',
              "", "", "def normalize_term(word):", '    """The index term of one word."""']
    if state == "conventional":
        lines += ["    return fold(word)"]
    else:
        lines += ["    return fold(word)[:PREFIX_LEN]"]
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


def build_story(s: Shape, source: str) -> Story:
    """The story of one variant x source."""
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
    # Held-out checks try every prefix length, so no input singles out the real one (the fact);
    # expected values only right of each assert (dropped from the held-out observation tests).
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


def test_hidden_words_sharing_a_prefix(observe):
    for n in range(3, 21):
        idx = Index()
        idx.add(1, ALPHABET[:n] + "alpha")
        observe(idx.search(ALPHABET[:n] + "omega"))
'''
    w = LENGTHS[k]
    fact_k = (CONVENTIONS, f"- Search: index terms are the first {k} characters of the folded word, so British "
              "and American spellings and most inflections meet. Queries go through the same normaliser.")
    fact_f = (PREFERENCES, f"- (review of #702, catalogue team) Index terms keep {w} characters of the folded "
              "word, no more and no fewer; we tuned that against real queries.")
    fact_x = (PAST_FIXES, f"## Autocomplete missed spelling variants\nSymptom: {pkg}/suggest.py did not offer "
              f"'colour' for 'color' words. Fix: cut suggestion keys to the index prefix of {k} characters "
              "after folding, as the normaliser does.")
    entries = {"K": [fact_k], "F": [fact_f], "X": [fact_x]}
    distractors = [
        (f"{ADR_DIR}/0005-search.md", "# ADR-0005: In-process search\n\nStatus: Accepted\n\nSearch is an "
         "in-memory inverted index rebuilt at start-up; queries are AND of their terms."),
        (f"{ADR_DIR}/0003-term-prefix.md", "# ADR-0003: Index terms\n\nStatus: Superseded\n\nTerms were whole "
         "folded words, without any prefix cut. Superseded by later search work."),
        (f"{ADR_DIR}/0004-stopwords.md", "# ADR-0004: Stopwords\n\nStatus: Accepted\n\nA short English stopword "
         "list is removed before indexing; it is not configurable."),
        (CONVENTIONS, "- Text is folded with NFKD and combining marks are dropped; case-folding, not lower()."),
        (CONVENTIONS, "- Document ids are opaque; the index never parses them."),
        (PREFERENCES, "- (review of #688) No regex per query in hot paths; compile patterns at import time."),
        (PREFERENCES, "- (review of #694) Digits are not indexed; SKUs have their own lookup."),
        (PAST_FIXES, "## Removing a document left stale postings\nSymptom: deleted items were still found. Fix: "
         "re-analyse the stored text on removal and discard the id from each posting."),
    ]
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
        v1_correct=normalize(s, "correct", helper=False),
        v1_buggy=normalize(s, "buggy", helper=False),
        head_buggy=normalize(s, "buggy", helper=True),
        oracle=normalize(s, "oracle", helper=True),
        conventional=normalize(s, "conventional", helper=True),
        intro_msg_fact=f"normalize: fold words and keep a prefix\n\nTerms are the first {k} characters of the "
        "folded word, so spelling variants meet in the index.",
        intro_msg_plain="normalize: fold words and keep a prefix",
        refactor_msg="normalize: add same_term helper; tidy constants",
        base_files={
            f"{pkg}/__init__.py": f'"""{s.project}: search over {s.things}."""\n',
            f"{pkg}/analyze.py": analyze(pkg),
            f"{pkg}/index.py": index(pkg),
            "tests/test_search.py": base_tests,
            "README.md": f"# {s.project}\n\nFast in-process search over {s.things}.\n",
        },
        repro_tests={"tests/test_repro_false_match.py": repro},
        hidden_tests={"tests/test_hidden_terms.py": hidden},
        fact_entries=entries,
        distractors=distractors,
        filler=[mh.filler(source, "highlight: mark query words in snippets", "", filler_files)],
    )


class SearchPrefix:
    """Generator of the search-prefix family."""

    family = FAMILY
    bottleneck = "multi-hop"
    variants = (0, 1)
    description = "the length of the prefix a text normaliser keeps as an index term, two calls below search"

    def build(self, variant: int, source: str):
        """Build one variant with the fact in `source`."""
        s = shape(variant)
        return assemble(
            build_story(s, source),
            family=FAMILY,
            variant=variant,
            source=source,
            bottleneck=self.bottleneck,
            project=s.project,
            statement=(
                f"Search over {s.things} returns nonsense: looking for \"cartoon\" also brings up the "
                "cartography atlas, and other short queries match unrelated words that merely start the same "
                "way. tests/test_repro_false_match.py reproduces it."
            ),
            fact=f"Index terms are the first {s.length} characters of the folded word.",
            fact_tokens=tokens(s),
            conventional_guess="index whole folded words (no prefix cut)",
            tags=("search", "text-normalisation"),
            description=self.description,
        )


GENERATOR = SearchPrefix()
