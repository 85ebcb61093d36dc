"""Whether a cell's output holds an expect line: the lessons' rule (tests/experiments/md_blocks.h,
expect_found) for the notebooks, held to the same table of cases
(tests/experiments/expect_cases.json, test_expect_text.py).

Plain text is found as written. With placeholders, the text around them matches as written but
for runs of spaces (a table's columns move when a number's width changes), and each placeholder
takes the number printed in its place:
  {~X}    |y - X| <= max(1e-4 |X|, one unit of X's last printed digit)
  {<X}    |y| < X
  {A..B}  A <= y <= B
A number that depends on the order float32 sums were added in (the CPU kernel, OpenBLAS's sgemm
kernel) is written with one of them; ids, tokens and counts no float sum decides, as printed."""
import re

_NUM = r"[-+]?[0-9]*\.?[0-9]+(?:e[-+]?[0-9]+)?"
PLACEHOLDER = re.compile(r"\{(?:([~<])(%s)|(%s)\.\.(%s))\}" % (_NUM, _NUM, _NUM))
PRINTED = r"([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:e[-+]?[0-9]+)?)"


def _literal(text):
    return "".join(" +" if part.isspace() else re.escape(part) for part in re.split(r"( +)", text) if part)


def _unit(x):
    """One unit of the last printed digit of x ("0.3898" -> 1e-4, "2.5e-05" -> 1e-6)."""
    mantissa, _, exp = x.partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** ((int(exp) if exp else 0) - decimals)


def _holds(kind, x, hi, y):
    if kind == "<":
        return abs(y) < float(x)
    if kind == ".":
        return float(x) <= y <= float(hi)
    return abs(y - float(x)) <= max(1e-4 * abs(float(x)), _unit(x)) * (1 + 1e-9)   # 0.09 - 0.08 is not 0.01 in binary


def expect_found(out, e):
    checks, pattern, last = [], "", 0
    for m in PLACEHOLDER.finditer(e):
        pattern += _literal(e[last:m.start()]) + PRINTED
        checks.append((m.group(1), m.group(2), None) if m.group(1) else (".", m.group(3), m.group(4)))
        last = m.end()
    if not checks:
        return e in out
    pattern = re.compile(pattern + _literal(e[last:]))
    # Every place the text fits, not only the first: an earlier line may fit with other numbers.
    pos = 0
    while True:
        m = pattern.search(out, pos)
        if not m:
            return False
        if all(_holds(k, x, hi, float(m.group(i + 1))) for i, (k, x, hi) in enumerate(checks)):
            return True
        pos = m.start() + 1
