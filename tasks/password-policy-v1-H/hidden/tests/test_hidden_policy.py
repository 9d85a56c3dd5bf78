from vaultcli.passphrase import is_acceptable, passphrase_problems


def test_hidden_one_short_of_minimum():
    assert passphrase_problems("xkestrelvan7")


def test_hidden_exact_minimum():
    assert passphrase_problems("xkestrelvani7") == []


def test_hidden_run_too_long():
    assert not is_acceptable("xxxxkestrelvani7")


def test_hidden_longest_allowed_run():
    assert is_acceptable("xxxkestrelvanim7")
