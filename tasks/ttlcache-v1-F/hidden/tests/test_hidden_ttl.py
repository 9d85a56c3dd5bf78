from geocache import config
from geocache.cache import TTLCache


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_hidden_alive_just_before_expiry():
    clock = Clock()
    cache = TTLCache(clock)
    cache.set("k", "v")
    clock.now = 397
    assert cache.get("k") == "v"


def test_hidden_gone_at_expiry():
    clock = Clock()
    cache = TTLCache(clock)
    cache.set("k", "v")
    clock.now = 399
    assert cache.get("k") is None


def test_hidden_setting():
    assert config.DEFAULT_TTL_SECONDS == 398
