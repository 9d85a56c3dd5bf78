from vaultcli.passphrase import is_acceptable, passphrase_problems
PLAIN = 'kestrelvanimbofujewdq'

def password(length, run=1):
    body = 'x' * run + PLAIN
    return body[:length - 1] + '7' if length > run else 'x' * length

def test_hidden_length_rule(observe):
    observe([passphrase_problems(password(n)) == [] for n in range(4, 25)])

def test_hidden_problems_listed(observe):
    observe([passphrase_problems(password(n)) for n in range(4, 25)])

def test_hidden_run_rule(observe):
    observe([is_acceptable(password(20, r)) for r in range(1, 8)])
