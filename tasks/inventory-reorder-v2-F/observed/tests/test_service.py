from stockroom.service import Item, suggest_orders

def test_no_demand_never_reorders(observe):
    observe.compare(suggest_orders([Item('A1', 0, 0, 9)]), '==', [])

def test_empty_shelf_reorders(observe):
    observe.compare(suggest_orders([Item('A1', 0, 4, 9)]), '==', ['A1'])

def test_plenty_of_stock_does_not_reorder(observe):
    observe.compare(suggest_orders([Item('A1', 9000, 4, 9)]), '==', [])

def test_suggestions_are_sorted(observe):
    observe.compare(suggest_orders([Item('B2', 0, 1, 2), Item('A1', 0, 1, 2)]), '==', ['A1', 'B2'])
