import pytest

from kbfind.search import score, search


def test_hidden_title_hit_score():
    assert score({"title": "vpn", "body": ""}, "vpn") == pytest.approx(2.31)


def test_hidden_one_title_hit_against_two_body_hits():
    docs = [{"id": "z-title", "title": "vpn", "body": ""}, {"id": "a-body", "title": "", "body": "vpn vpn"}]
    assert search(docs, "vpn") == ['z-title', 'a-body']


def test_hidden_three_title_hits_against_body_hits():
    docs = [{"id": "t", "title": "vpn vpn vpn", "body": ""}, {"id": "m", "title": "", "body": "vpn vpn vpn vpn vpn vpn"}]
    assert search(docs, "vpn") == ["t", "m"]
    docs.append({"id": "n", "title": "", "body": "vpn vpn vpn vpn vpn vpn vpn"})
    assert search(docs, "vpn") == ["n", "t", "m"]
