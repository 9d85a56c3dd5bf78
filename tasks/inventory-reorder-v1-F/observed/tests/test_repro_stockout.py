from partsdepot.service import Item, suggest_orders

def test_low_stock_is_reordered_in_time(observe):
    observe.compare(suggest_orders([Item('X9', 1150, 100, 10)]), '==', ['X9'])
