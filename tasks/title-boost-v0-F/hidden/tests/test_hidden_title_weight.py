import pytest
from docsearch.search import score, search
WORD = 'refund'

def doc(title_hits, body_hits):
    return {'id': f'd{title_hits}{body_hits}', 'title': ' '.join([WORD] * title_hits), 'body': ' '.join([WORD] * body_hits)}

def test_hidden_title_hit_score(observe):
    observe(score({'title': 'refund', 'body': ''}, 'refund'))

def test_hidden_scores_of_mixed_documents(observe):
    observe([score(doc(a, b), WORD) for a in range(4) for b in range(10)])

def test_hidden_ranking(observe):
    observe(search([doc(a, b) for a in range(4) for b in range(10)], WORD))
