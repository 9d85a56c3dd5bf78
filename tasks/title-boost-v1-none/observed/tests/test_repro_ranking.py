from kbfind.search import score, search

def test_title_match_outranks_passing_mention(observe):
    docs = [{'id': 'a-faq', 'title': 'Shipping FAQ', 'body': 'see vpn rules elsewhere'}, {'id': 'b-page', 'title': 'VPN setup guide', 'body': 'how it works'}]
    observe.compare(search(docs, 'vpn'), '==', ['b-page', 'a-faq'])
