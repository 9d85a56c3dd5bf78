from accountsvc.policy import is_acceptable, password_problems


def test_hidden_one_short_of_minimum():
    assert password_problems("xkestrelv7")


def test_hidden_exact_minimum():
    assert password_problems("xkestrelva7") == []


def test_hidden_run_too_long():
    assert not is_acceptable("xxxkestrelvanim7")


def test_hidden_longest_allowed_run():
    assert is_acceptable("xxkestrelvanimb7")
