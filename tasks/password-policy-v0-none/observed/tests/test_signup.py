import pytest
from accountsvc.signup import Rejected, register
from accountsvc.policy import longest_run, password_problems

def test_long_mixed_password_is_fine(observe):
    observe.compare(password_problems('violet-harbor-engine'), '==', [])

def test_letters_only_is_rejected(observe):
    observe.truth(password_problems('violetharborengine'))

def test_longest_run(observe):
    observe.compare(longest_run('abbcccd'), '==', 3)

def test_register_stores_account(observe):
    store = {}
    register(store, 'ana', 'violet-harbor-engine')
    observe.compare('ana', 'in', store)

def test_register_rejects_bad_password(observe):
    with observe.raises():
        register({}, 'ana', 'abc')
