from findit.index import Index

def test_cartoon_does_not_find_cartography(observe):
    idx = Index()
    idx.add('atlas', 'Cartography atlas')
    idx.add('stickers', 'Cartoon stickers')
    observe.compare(idx.search('cartoon'), '==', {'stickers'})
