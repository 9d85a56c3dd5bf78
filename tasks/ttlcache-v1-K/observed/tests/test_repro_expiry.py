from geocache.cache import TTLCache

class Clock:

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

def test_answer_survives_150_seconds(observe):
    clock = Clock()
    cache = TTLCache(clock)
    cache.set('k', 'v')
    clock.now = 150
    observe.compare(cache.get('k'), '==', 'v')
