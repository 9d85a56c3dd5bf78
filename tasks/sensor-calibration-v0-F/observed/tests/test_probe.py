import pytest
from thermolog.probe import millivolts, to_celsius, to_fahrenheit
from thermolog.log import summary

def test_zero_counts_is_zero_volts(observe):
    observe.compare(millivolts(0), '==', 0)

def test_counts_out_of_range(observe):
    with observe.raises():
        millivolts(5000)

def test_fahrenheit_follows_celsius(observe):
    observe.compare(to_fahrenheit(1000), '==', round(to_celsius(1000) * 9 / 5 + 32, 2))

def test_summary_of_nothing(observe):
    observe.compare(summary([]), '==', {'count': 0})
