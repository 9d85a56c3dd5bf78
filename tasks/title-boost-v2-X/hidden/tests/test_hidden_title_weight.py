import pytest

from docsearch.search import score, search


def test_hidden_title_hit_score():
    assert score({"title": "refund", "body": ""}, "refund") == pytest.approx(1.56)


def test_hidden_one_title_hit_against_two_body_hits():
    docs = [{"id": "a-title", "title": "refund", "body": ""}, {"id": "z-body", "title": "", "body": "refund refund"}]
    assert search(docs, "refund") == ['z-body', 'a-title']


def test_hidden_three_title_hits_against_body_hits():
    docs = [{"id": "t", "title": "refund refund refund", "body": ""}, {"id": "m", "title": "", "body": "refund refund refund refund"}]
    assert search(docs, "refund") == ["t", "m"]
    docs.append({"id": "n", "title": "", "body": "refund refund refund refund refund"})
    assert search(docs, "refund") == ["n", "t", "m"]
