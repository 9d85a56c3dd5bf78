from vaultcli.signup import Rejected, register
from vaultcli.passphrase import passphrase_problems

def test_seven_character_passphrase_is_rejected(observe):
    observe.truth(passphrase_problems('tulip42'))

def test_register_refuses_short_passphrase(observe):
    try:
        register({}, 'bo', 'tulip42')
    except Rejected:
        return
    raise AssertionError('a seven-character passphrase was accepted')
