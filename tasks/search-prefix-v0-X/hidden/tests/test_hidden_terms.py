from findit.index import Index
from findit.normalize import normalize_term

K = 14
SHARED = "qwertyuiopasdf"


def test_hidden_spelling_variants_meet():
    idx = Index()
    idx.add("uk", "Internationalisation guide")
    idx.add("us", "Internationalization guide")
    assert idx.search("internationalization") == {"uk", "us"}


def test_hidden_term_length():
    assert normalize_term("qwertyuiopasdfghjklzxcvbnm") == "qwertyuiopasdfghjklzxcvbnm"[:K]


def test_hidden_words_sharing_the_prefix_meet():
    idx = Index()
    idx.add(1, SHARED + "alpha")
    assert idx.search(SHARED + "omega") == {1}


def test_hidden_words_sharing_one_less_differ():
    idx = Index()
    idx.add(1, SHARED[:-1] + "alpha")
    assert idx.search(SHARED[:-1] + "omega") == set()
