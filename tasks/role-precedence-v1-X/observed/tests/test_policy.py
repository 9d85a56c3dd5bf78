from aclhub.policy import can

def test_single_role_top(observe):
    observe.truth(can(['owner'], 'publish'))

def test_single_role_last(observe):
    observe.truth(can(['commenter'], 'publish'), False)

def test_unknown_action_denied(observe):
    observe.truth(can(['owner'], 'teleport'), False)

def test_order_of_roles_given_does_not_matter(observe):
    observe.compare(can(['editor', 'commenter'], 'publish'), '==', can(['commenter', 'editor'], 'publish'))
