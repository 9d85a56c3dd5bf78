from aclhub.policy import can

def test_editor_who_is_also_author_can_publish(observe):
    observe.truth(can(['editor', 'author'], 'publish'))
