from docsearch.search import score, search

def test_no_match_is_not_returned(observe):
    observe.compare(search([{'id': 'a', 'title': 'x', 'body': 'y'}], 'refund'), '==', [])

def test_more_body_hits_rank_higher(observe):
    docs = [{'id': 'a', 'title': '', 'body': 'refund'}, {'id': 'b', 'title': '', 'body': 'refund refund refund'}]
    observe.compare(search(docs, 'refund'), '==', ['b', 'a'])

def test_ties_go_to_smaller_id(observe):
    docs = [{'id': 'b', 'title': '', 'body': 'refund'}, {'id': 'a', 'title': '', 'body': 'refund'}]
    observe.compare(search(docs, 'refund'), '==', ['a', 'b'])

def test_body_hit_scores_one(observe):
    observe.compare(score({'title': '', 'body': 'refund here'}, 'refund'), '==', 1.0)
