from accountsvc.signup import Rejected, register
from accountsvc.policy import password_problems

def test_seven_character_password_is_rejected(observe):
    observe.truth(password_problems('tulip42'))

def test_register_refuses_short_password(observe):
    try:
        register({}, 'bo', 'tulip42')
    except Rejected:
        return
    raise AssertionError('a seven-character password was accepted')
