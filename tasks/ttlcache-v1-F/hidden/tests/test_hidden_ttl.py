from geocache import config
from geocache.cache import TTLCache

class Clock:

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

def read_at(seconds):
    clock = Clock()
    cache = TTLCache(clock)
    cache.set('k', 'v')
    clock.now = seconds
    return cache.get('k')

def test_hidden_alive_until_expiry(observe):
    observe([t for t in range(1, 1000) if read_at(t) == 'v'])

def test_hidden_gone_after_expiry(observe):
    observe([read_at(t) for t in range(1, 3600, 97)])

def test_hidden_setting(observe):
    observe(config.DEFAULT_TTL_SECONDS)
