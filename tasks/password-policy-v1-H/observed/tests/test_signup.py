import pytest
from vaultcli.signup import Rejected, register
from vaultcli.passphrase import longest_run, passphrase_problems

def test_long_mixed_passphrase_is_fine(observe):
    observe.compare(passphrase_problems('violet-harbor-engine'), '==', [])

def test_letters_only_is_rejected(observe):
    observe.truth(passphrase_problems('violetharborengine'))

def test_longest_run(observe):
    observe.compare(longest_run('abbcccd'), '==', 3)

def test_register_stores_account(observe):
    store = {}
    register(store, 'ana', 'violet-harbor-engine')
    observe.compare('ana', 'in', store)

def test_register_rejects_bad_passphrase(observe):
    with observe.raises():
        register({}, 'ana', 'abc')
