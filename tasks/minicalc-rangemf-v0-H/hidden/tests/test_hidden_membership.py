import pytest
from minicalc.api import calc
from minicalc.fuzzy import member

def test_hidden_lower_bound(observe):
    observe(calc('member(temp, 10, 20)', temp=10))

def test_hidden_upper_bound(observe):
    observe(calc('member(temp, 10, 20)', temp=20))

def test_hidden_outside_keeps_residual(observe):
    observe(calc('member(temp, 10, 20)', temp=50))
    observe(calc('member(temp, 10, 20)', temp=3))

def test_hidden_combined_rule(observe):
    observe(calc('1 - either(member(temp, 10, 20), member(temp, 30, 40))', temp=25))

def test_hidden_direct_call_inside(observe):
    observe(member(10.5, 10, 20))
