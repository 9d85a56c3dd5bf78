from gatekeep.policy import can

def test_single_role_top(observe):
    observe.truth(can(['owner'], 'merge'))

def test_single_role_last(observe):
    observe.truth(can(['guest'], 'merge'), False)

def test_unknown_action_denied(observe):
    observe.truth(can(['owner'], 'teleport'), False)

def test_order_of_roles_given_does_not_matter(observe):
    observe.compare(can(['maintainer', 'guest'], 'merge'), '==', can(['guest', 'maintainer'], 'merge'))
