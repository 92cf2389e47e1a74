"""Run by test_plugin.py with `pytest --flashref-set=quick`: one test item per case of the set."""


def test_fast_engine(flashref_case):
    flashref_case.check(lambda case: case.attention())
