from ratecache.cache import TTLCache

class Clock:

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

def test_missing_key_gives_default(observe):
    observe.compare(TTLCache(Clock()).get('nope', 7), '==', 7)

def test_fresh_entry_is_returned(observe):
    clock = Clock()
    cache = TTLCache(clock)
    cache.set('k', 'v')
    clock.now = 1
    observe.compare(cache.get('k'), '==', 'v')

def test_explicit_ttl_wins(observe):
    clock = Clock()
    cache = TTLCache(clock, ttl=10)
    cache.set('k', 'v')
    clock.now = 10
    observe.compare(cache.get('k'), 'is', None)
