#!/usr/bin/env python3
"""Says whose bug a fuzzer finding is: lmscope's, or libhdf5's own.

    fuzz/triage.py REPORT...      one line per report: "<report>: lmscope|libhdf5: <what>"
                                  exit 1 when any report is lmscope's (or cannot be read)

A report is the output of re-running a reproducer (scripts/fuzz.sh does it). The first stack
of the report is walked from the top, past the sanitizer's and libFuzzer's own frames (the
allocator, memcpy's interceptor, the timeout's signal handler); the first frame left says
where the bad access, the hang or the allocation happened. When that frame is in Debian's
libhdf5 (libhdf5_serial.so), the finding is libhdf5's: a damaged file drives its parser
into the fault (docs/trace-format.md, "Traces from an untrusted source"). Anywhere else it
is lmscope's, and the script fails. A leak report is libhdf5's only when every leaked block
was allocated by libhdf5 itself. A report with no stack (an RSS limit) counts as lmscope's.
"""
import re
import sys

FRAME = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+(?: in (.*?))? \(?([^()\s]*\.so[^()\s]*|[^()\s]+)\+0x[0-9a-f]+\)")
FRAME_SRC = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ in (.*?) (/\S+):\d+")
RUNTIME = re.compile(r"^(__interceptor_|__asan|__sanitizer|__ubsan|__lsan|__tsan|fuzzer::|__libc_|__GI_|"
                     r"(malloc|calloc|realloc|free|posix_memalign|aligned_alloc|memcpy|memmove|memset|strlen|"
                     r"abort|raise|gsignal|__restore_rt|operator new|operator delete)\b)")
KINDS = [
    (re.compile(r"SUMMARY: AddressSanitizer: ([\w-]+)"), None),
    (re.compile(r"runtime error: (.*)"), "undefined behaviour"),
    (re.compile(r"ERROR: libFuzzer: (timeout|out-of-memory|deadly signal)"), None),
    (re.compile(r"ERROR: LeakSanitizer"), "leak"),
]


def frames(lines):
    """The stacks of a report: lists of (function, module-or-file)."""
    stacks, cur = [], []
    for line in lines:
        m = FRAME_SRC.match(line) or FRAME.match(line)
        if m:
            if m.group(1) == "0" and cur:
                stacks.append(cur)
                cur = []
            cur.append(((m.group(2) or "").strip(), m.group(3)))
        elif cur and not line.strip():
            stacks.append(cur)
            cur = []
    if cur:
        stacks.append(cur)
    return stacks


def first_real(stack):
    for fn, where in stack:
        if RUNTIME.match(fn) or "libclang_rt" in where or "/libc.so" in where:
            continue
        return fn, where
    return None


def in_libhdf5(frame):
    return frame is not None and "libhdf5" in frame[1]


def triage(text):
    lines = text.splitlines()
    kind = None
    for pattern, name in KINDS:
        for line in lines:
            m = pattern.search(line)
            if m:
                kind = name or m.group(1)
                break
        if kind:
            break
    if kind is None:
        return "lmscope", "no sanitizer or libFuzzer report when re-run (not reproduced)"
    stacks = frames(lines)
    if not stacks:
        return "lmscope", f"{kind} without a stack"
    if kind == "leak":
        tops = [first_real(s) for s in stacks]
        if all(in_libhdf5(t) for t in tops):
            return "libhdf5", f"leak allocated inside libhdf5 ({tops[0][0] or tops[0][1]})"
        return "lmscope", "leak of lmscope's memory"
    top = first_real(stacks[0])
    where = f"{top[0] or '?'} ({top[1].rsplit('/', 1)[-1]})" if top else "?"
    return ("libhdf5" if in_libhdf5(top) else "lmscope"), f"{kind} in {where}"


def main(paths):
    status = 0
    for path in paths:
        try:
            with open(path, errors="replace") as f:
                owner, what = triage(f.read())
        except OSError as e:
            owner, what = "lmscope", f"cannot read the report: {e.strerror}"
        print(f"{path}: {owner}: {what}")
        status |= owner == "lmscope"
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
