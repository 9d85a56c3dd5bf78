from doclens.index import Index
from doclens.normalize import normalize_term
ALPHABET = 'qwertyuiopasdfghjklzxcvbnm'

def test_hidden_spelling_variants_meet(observe):
    idx = Index()
    idx.add('uk', 'Internationalisation guide')
    idx.add('us', 'Internationalization guide')
    observe(idx.search('internationalization'))

def test_hidden_term_length(observe):
    observe(normalize_term(ALPHABET))

def test_hidden_suffixes_stripped(observe):
    observe([normalize_term(w) for w in ('lamps', 'boxes', 'jumped', 'painter', 'quickly', 'running', 'payment', 'red', 'sing')])

def test_hidden_words_sharing_a_prefix(observe):
    for n in range(3, 21):
        idx = Index()
        idx.add(1, ALPHABET[:n] + 'alpha')
        observe(idx.search(ALPHABET[:n] + 'omega'))
