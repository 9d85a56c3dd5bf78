from kbfind.search import score, search

def test_no_match_is_not_returned(observe):
    observe.compare(search([{'id': 'a', 'title': 'x', 'body': 'y'}], 'vpn'), '==', [])

def test_more_body_hits_rank_higher(observe):
    docs = [{'id': 'a', 'title': '', 'body': 'vpn'}, {'id': 'b', 'title': '', 'body': 'vpn vpn vpn'}]
    observe.compare(search(docs, 'vpn'), '==', ['b', 'a'])

def test_ties_go_to_smaller_id(observe):
    docs = [{'id': 'b', 'title': '', 'body': 'vpn'}, {'id': 'a', 'title': '', 'body': 'vpn'}]
    observe.compare(search(docs, 'vpn'), '==', ['a', 'b'])

def test_body_hit_scores_one(observe):
    observe.compare(score({'title': '', 'body': 'vpn here'}, 'vpn'), '==', 1.0)
