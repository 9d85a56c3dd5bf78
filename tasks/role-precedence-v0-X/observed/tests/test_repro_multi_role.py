from gatekeep.policy import can

def test_maintainer_who_is_also_contributor_can_merge(observe):
    observe.truth(can(['maintainer', 'contributor'], 'merge'))
