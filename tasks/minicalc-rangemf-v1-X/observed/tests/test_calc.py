import pytest
from exprlab.api import calc
from exprlab.parser import parse

def test_precedence(observe):
    observe.compare(calc('2 + 3 * 4'), '==', 14)

def test_parentheses_and_negation(observe):
    observe.compare(calc('-(2 + 3) * 2'), '==', -10)

def test_variables(observe):
    observe.compare(calc('level / 4', level=10), '==', 2.5)

def test_call_ast(observe):
    observe.compare(parse('max(1, 2)'), '==', ('call', 'max', [('num', 1.0), ('num', 2.0)]))

def test_unknown_function(observe):
    with observe.raises():
        calc('nope(1)')

def test_unknown_variable(observe):
    with observe.raises():
        calc('level + 1')

def test_fuzzy_and_or(observe):
    observe.compare(calc('both(0.25, 0.75)'), '==', 0.25)
    observe.compare(calc('either(0.25, 0.75)'), '==', 0.75)

def test_value_in_the_middle_is_inside(observe):
    observe.compare(calc('within(level, 10, 20)', level=15), '==', 1)

def test_empty_range_rejected(observe):
    with observe.raises():
        calc('within(5, 8, 2)')
