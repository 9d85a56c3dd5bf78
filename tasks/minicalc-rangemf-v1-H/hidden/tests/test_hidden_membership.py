import pytest
from exprlab.api import calc
from exprlab.fuzzy import within

def test_hidden_lower_bound(observe):
    observe(calc('within(level, 10, 20)', level=10))

def test_hidden_upper_bound(observe):
    observe(calc('within(level, 10, 20)', level=20))

def test_hidden_outside_keeps_residual(observe):
    observe(calc('within(level, 10, 20)', level=50))
    observe(calc('within(level, 10, 20)', level=3))

def test_hidden_combined_rule(observe):
    observe(calc('1 - either(within(level, 10, 20), within(level, 30, 40))', level=25))

def test_hidden_direct_call_inside(observe):
    observe(within(10.5, 10, 20))
