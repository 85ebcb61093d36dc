"""The notebooks' expect rule (expect_text.py) on the table of cases the lessons' runner
(tests/experiments/md_blocks.h) is held to: the two runners agree on every case."""
import json
import os

from conftest import ROOT
from expect_text import expect_found

TABLE = json.load(open(os.path.join(ROOT, "tests", "experiments", "expect_cases.json"), encoding="utf-8"))


def test_the_table_is_there():
    assert len(TABLE["cases"]) >= 10


def test_every_case():
    wrong = ["%r: expected found=%s (%s)" % (c["expect"], c["found"], c["why"])
             for c in TABLE["cases"] if expect_found(TABLE["output"], c["expect"]) != c["found"]]
    assert not wrong, "\n".join(wrong)
