from docsearch.search import score, search

def test_title_match_outranks_passing_mention(observe):
    docs = [{'id': 'a-faq', 'title': 'Shipping FAQ', 'body': 'see refund rules elsewhere'}, {'id': 'b-page', 'title': 'Refund policy', 'body': 'how it works'}]
    observe.compare(search(docs, 'refund'), '==', ['b-page', 'a-faq'])
