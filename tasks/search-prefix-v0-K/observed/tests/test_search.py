from findit.analyze import terms, words
from findit.index import Index
from findit.normalize import fold

def test_fold_strips_accents_and_case(observe):
    observe.compare(fold('Crème BRÛLÉE'), '==', 'creme brulee')

def test_stopwords_removed(observe):
    observe.compare(words('The art of war'), '==', ['art', 'war'])

def test_terms_are_distinct(observe):
    observe.compare(len(terms('red red red')), '==', 1)

def test_search_and_query(observe):
    idx = Index()
    idx.add(1, 'red lamp')
    idx.add(2, 'blue lamp')
    observe.compare(idx.search('lamp'), '==', {1, 2})
    observe.compare(idx.search('red lamp'), '==', {1})
    observe.compare(idx.search('the'), '==', set())

def test_accents_do_not_matter(observe):
    idx = Index()
    idx.add(1, 'Café table')
    observe.compare(idx.search('cafe'), '==', {1})

def test_readd_replaces(observe):
    idx = Index()
    idx.add(1, 'red lamp')
    idx.add(1, 'green chair')
    observe.compare(idx.search('lamp'), '==', set())
