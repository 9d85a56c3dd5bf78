import pytest
from minicalc.api import calc
from minicalc.parser import parse

def test_precedence(observe):
    observe.compare(calc('2 + 3 * 4'), '==', 14)

def test_parentheses_and_negation(observe):
    observe.compare(calc('-(2 + 3) * 2'), '==', -10)

def test_variables(observe):
    observe.compare(calc('temp / 4', temp=10), '==', 2.5)

def test_call_ast(observe):
    observe.compare(parse('max(1, 2)'), '==', ('call', 'max', [('num', 1.0), ('num', 2.0)]))

def test_unknown_function(observe):
    with observe.raises():
        calc('nope(1)')

def test_unknown_variable(observe):
    with observe.raises():
        calc('temp + 1')

def test_fuzzy_and_or(observe):
    observe.compare(calc('both(0.25, 0.75)'), '==', 0.25)
    observe.compare(calc('either(0.25, 0.75)'), '==', 0.75)

def test_value_in_the_middle_is_inside(observe):
    observe.compare(calc('member(temp, 10, 20)', temp=15), '==', 1)

def test_empty_range_rejected(observe):
    with observe.raises():
        calc('member(5, 8, 2)')
