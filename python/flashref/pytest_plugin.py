"""pytest plugin (registered through the pytest11 entry point): `pytest --flashref-set=quick` parametrizes every
test that takes the `flashref_case` fixture over the set's cases, one test item per case.

    def test_my_kernel(flashref_case):
        flashref_case.check(my_attention)      # FAIL -> assertion error with the diagnosis, SKIP -> pytest skip
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import pytest

from ._verify import VerifyResult, list_cases, verify


def pytest_addoption(parser: Any) -> None:
    g = parser.getgroup("flashref")
    g.addoption("--flashref-set", default=None, help="suite set to parametrize flashref_case over (quick, default, "
                                                     "long, all)")
    g.addoption("--flashref-filter", default=None, help="only cases whose name contains this")
    g.addoption("--flashref-tensors", default="numpy", choices=("numpy", "torch"), help="what the callable receives")


class SuiteCase:
    """One case of a suite set, as a test parameter: .name, .category, .what; .verify(fn) judges fn on it alone
    (a VerifyResult of one case); .check(fn) asserts it is not a FAIL (pytest.skip on SKIP)."""

    def __init__(self, set_name: str, info: dict, tensors: str):
        self.set, self.name, self.category, self.what = set_name, info["name"], info["category"], info["what"]
        self.tensors = tensors

    def verify(self, fn: Callable, **kw: Any) -> VerifyResult:
        kw.setdefault("tensors", self.tensors)
        return verify(fn, self.set, case=self.name, **kw)

    def check(self, fn: Callable, **kw: Any) -> VerifyResult:
        r = self.verify(fn, **kw)
        c = r[self.name]
        if c.verdict == "SKIP":
            pytest.skip("%s: %s" % (self.name, c.why))
        assert c.verdict != "FAIL", "%s [%s] FAIL: %s: %s%s" % (self.name, c.category, c.diagnosis, c.why,
                                                               "\n" + c.error if c.error else "")
        return r

    def __repr__(self) -> str:
        return self.name


def pytest_generate_tests(metafunc: Any) -> None:
    if "flashref_case" not in metafunc.fixturenames:
        return
    set_name: Optional[str] = metafunc.config.getoption("flashref_set")
    tensors = metafunc.config.getoption("flashref_tensors")
    if not set_name:
        metafunc.parametrize("flashref_case", [pytest.param(None, marks=pytest.mark.skip(
            reason="flashref_case: no suite set given (pytest --flashref-set=quick)"))], ids=["no-flashref-set"])
        return
    cases = list_cases(set_name, metafunc.config.getoption("flashref_filter"))
    metafunc.parametrize("flashref_case", [SuiteCase(set_name, c, tensors) for c in cases],
                         ids=[c["name"] for c in cases])
