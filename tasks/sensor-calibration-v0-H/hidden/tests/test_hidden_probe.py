from thermolog.probe import to_celsius, to_fahrenheit
from thermolog.log import summary

def test_hidden_celsius_sweep(observe):
    observe([to_celsius(c) for c in range(0, 4096, 37)])

def test_hidden_fahrenheit_sweep(observe):
    observe([to_fahrenheit(c) for c in range(5, 4096, 91)])

def test_hidden_summary(observe):
    observe(summary([620, 931, 1240, 4095]))
