from dataclasses import replace

import pytest

from sdebench.generation.kit import FillerVocab, Story
from sdebench.generation.sized import SizedStory, with_filler
from sdebench.tasks.tokens import find_tokens

VOCAB = FillerVocab("shop", ("order", "invoice", "parcel"), ("amount", "count"), ("region", "status"),
                    ("billing", "shipping", "reports", "exports"))


def story(variant, fact, home="billing"):
    return Story(
        package="shop", module=f"shop/{home}/rule.py", v1_correct=f"X = {fact}\n", v1_buggy="X = 1\n",
        head_buggy="X = 1\n\nY = 2\n", oracle=f"X = {fact}\n\nY = 2\n", conventional="X = 3\n\nY = 2\n",
        intro_msg_fact=f"rule: X is {fact}", intro_msg_plain="rule: add X", refactor_msg="rule: add Y",
        base_files={"shop/__init__.py": ""}, repro_tests={}, hidden_tests={}, fact_entries={}, distractors=[],
        fact_tokens=(str(fact),))


def sized(**kw):
    return SizedStory("shopfam", story, vocab=lambda v: VOCAB, home=lambda v: "billing", sizes={1: "small"}, **kw)


def test_the_story_sits_among_filler_of_the_chosen_size():
    told = sized().tell(1, 417)
    assert told.module == "shop/billing/rule.py" and "shop/__init__.py" in told.base_files
    assert len(told.filler) + len(told.late_filler) == 40  # "small": 8 modules, 40 commits
    assert len(told.late_filler) == 12  # the last 30 % come after the regressing refactor
    bigger = sized().tell_sized(1, 417, (10, 60))
    assert len(bigger.filler) + len(bigger.late_filler) == 60
    assert sized().tell(0, 417).late_filler != told.late_filler  # variant 0: the default size


def test_the_filler_avoids_the_drawn_or_the_told_tokens():
    def text(s):
        spec_files = {**s.base_files, **{p: c for com in s.filler + s.late_filler for p, c in com.files.items() if c}}
        return "\n".join([*spec_files.values(), *(c.message for c in s.filler + s.late_filler)])

    plain = text(sized().tell(1, 0))
    hit = next(w for w in ("order", "amount", "region") if find_tokens(plain, (w,)))
    assert not find_tokens(text(sized(avoid=lambda v: (hit,)).tell(1, 0)), (hit,))
    assert not find_tokens(text(sized().tell(1, hit)), (hit,))  # no `avoid`: the told fact's tokens


def test_a_rule_module_outside_the_filler_home_is_refused():
    with pytest.raises(ValueError, match="not in the filler's subpackage"):
        with_filler(story(0, 5, home="elsewhere"), sized().filler(0, "small"))


def test_a_shaped_story_places_its_rule_module_and_names_its_tokens():
    class Shape:
        vocab = VOCAB

    def untold(variant, fact):
        return replace(story(variant, fact, home="shipping"), fact_tokens=())

    shaped = SizedStory.shaped("shopfam", untold, {0: Shape(), 1: Shape()}, {0: "billing", 1: "shipping"},
                               sizes={1: "small"}, tokens=lambda variant, fact: (f"{fact}",))
    assert shaped.layout(1, "rule") == ("shop", "shop/shipping/rule.py", "shop.shipping.rule")
    assert shaped.home(2) == "billing" and shaped.vocab(3) is VOCAB
    assert shaped.tell(1, 417).fact_tokens == ("417",)
