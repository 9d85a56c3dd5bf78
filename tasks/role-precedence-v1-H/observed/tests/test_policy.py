from aclhub.policy import can

def test_single_role_top(observe):
    observe.truth(can(['admin'], 'publish'))

def test_single_role_last(observe):
    observe.truth(can(['viewer'], 'publish'), False)

def test_unknown_action_denied(observe):
    observe.truth(can(['admin'], 'teleport'), False)

def test_order_of_roles_given_does_not_matter(observe):
    observe.compare(can(['editor', 'viewer'], 'publish'), '==', can(['viewer', 'editor'], 'publish'))
