#!/usr/bin/env python3
"""Says whose bug a fuzzer finding is: lmscope's, or libhdf5's own.

    fuzz/triage.py REPORT...      one line per report: "<report>: lmscope|libhdf5|none: <what>"
                                  exit 1 when any report is lmscope's (or cannot be read)

A report is what the sanitizers wrote while fuzzing: scripts/fuzz.sh points their log_path at
build-asan/findings/<target>/report, so each fuzzing process leaves report.<pid> with whatever
ended it, with the stack as it was then: an AddressSanitizer or UBSan report, a leak, or
libFuzzer's stack at a timeout (fuzzer::Fuzzer::AlarmCallback), at an allocation over the
limit (fuzzer::Fuzzer::HandleMalloc) or at a signal (fuzzer::Fuzzer::CrashCallback). A
reproducer re-run by hand (build-asan/fuzz_trace FILE 2> X.report) prints the same to stderr.
Judging the report written at the time, not a re-run, matters for fuzz_trace: libhdf5 keeps
state from one input to the next, and some of its crashes do not come back alone.

The first stack of the finding is walked from the top, past the sanitizer's and libFuzzer's
own frames; the first frame left says where the bad access, the hang or the allocation
happened. When that frame is in Debian's libhdf5 (libhdf5_serial.so), the finding is
libhdf5's: a damaged file drives its parser into the fault (docs/trace-format.md, "Traces
from an untrusted source"). Anywhere else it is lmscope's, and the script fails. A leak report
is libhdf5's only when every leaked block was allocated by libhdf5 itself. An out-of-memory
over the RSS limit is judged by the allocation that holds most (half or more) of the live heap
in libFuzzer's profile, by its stack (libhdf5's 4 GB conversion buffer for a damaged
variable-length attribute: H5T__conv_vlen); with no such allocation it counts as lmscope's.
Frames of the executable printed without a name (the sanitizer could not start its symbolizer
at the RSS limit) are named from the executable's debug information before judging. For a
finding that is lmscope's, the script prints the stack it was judged by. A process that printed
only warnings (an allocation ASan refused and libhdf5 handled) is "none".

The sanitizer's own frames: the runtime and libFuzzer are linked into the fuzz target and
carry no source line (lmscope is compiled with -g, so its frames name a source file), and the
C library's. A libhdf5 call of strdup or memcpy is reported inside ASan's interceptor of that
function, in the target: walking past every frame of the target without a source line reaches
the caller, whichever C function was intercepted.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

# "#3 0x7f... in H5Aexists (/lib/x86_64-linux-gnu/libhdf5_serial.so.103+0x5c350)": no source
FRAME_BIN = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+(?: in (.*?))?\s+\(?([^()\s]+)\+(0x[0-9a-f]+)\)")
# "#5 0x55a0... in lmscope::h5::Object::has_attr(...) const /work/main/lib/io/hdf5.cpp:243:14"
FRAME_SRC = re.compile(r"^\s*#(\d+) 0x[0-9a-f]+ in (.*?) (\S+):\d+(?::\d+)?$")
C_RUNTIME = re.compile(r"^(__libc_|__GI_|_start$|abort$|raise$|gsignal$|__restore_rt$)")
# glibc's own frames name its build tree: "string/../sysdeps/x86_64/multiarch/memset-....S:235"
C_SOURCE = re.compile(r"^(\w+/)?(\.\./)*(sysdeps|csu)/")
HEADERS = [   # a sanitizer's report says what it is in its header
    (re.compile(r"SUMMARY: AddressSanitizer: ([\w-]+)"), None),
    (re.compile(r"runtime error: (.*)"), "undefined behaviour"),
    (re.compile(r"ERROR: LeakSanitizer"), "leak"),
    (re.compile(r"ERROR: libFuzzer: (timeout|out-of-memory|deadly signal)"), None),   # on stderr
]
LIBFUZZER_FRAMES = {   # libFuzzer's own reports go to stderr; in the log, its frame says what
    "fuzzer::Fuzzer::AlarmCallback()": "timeout",
    "fuzzer::Fuzzer::HandleMalloc(unsigned long)": "out-of-memory",
    "fuzzer::Fuzzer::CrashCallback()": "deadly signal",
}
RSS_PROFILE = "Live Heap Allocations"   # libFuzzer's memory profile at the RSS limit
RSS_CONTEXT = re.compile(r"^\d+ byte\(s\) \((\d+)%\) in \d+ allocation\(s\)")   # one context of it


class Frame:
    def __init__(self, function, where, has_source, offset=None):
        self.function, self.where, self.has_source = function, where, has_source
        self.offset = offset   # "0x1b4f0e" in `where`, for a frame printed without symbols
        self.line = ""         # the report's line, to show the stack when it is lmscope's

    def is_runtime(self):
        """The sanitizer, libFuzzer or the C library, not the code under test."""
        if (C_RUNTIME.match(self.function) or C_SOURCE.match(self.where) or "/libc.so" in self.where
                or "libclang_rt" in self.where):
            return True
        # In the executable (not a shared library) without a source line: linked-in runtime.
        return not self.has_source and ".so" not in os.path.basename(self.where)

    def in_libhdf5(self):
        return "libhdf5" in self.where

    def describe(self, below):
        """'H5C_protect (libhdf5_serial.so.103)'; an unnamed frame by the first named one under it."""
        name = self.function or next((f"? under {f.function}" for f in below if f.function), "?")
        return f"{name} ({self.where.rsplit('/', 1)[-1]})"


def stacks_of(lines):
    """The stacks of a report: lists of Frame, top first."""
    stacks, cur = [], []
    for line in lines:
        m = FRAME_SRC.match(line)
        frame = Frame(m.group(2).strip(), m.group(3), True) if m else None
        if frame is None:
            m = FRAME_BIN.match(line)
            frame = Frame((m.group(2) or "").strip(), m.group(3), False, m.group(4)) if m else None
        if frame:
            frame.line = line.strip()
            if m.group(1) == "0" and cur:
                stacks.append(cur)
                cur = []
            cur.append(frame)
        elif cur and not line.strip():
            stacks.append(cur)
            cur = []
    if cur:
        stacks.append(cur)
    return stacks


def symbolize(stack):
    """Names the frames of the executable that the report printed without symbols.

    At the RSS limit the sanitizer may fail to start its symbolizer, and then lmscope's own
    frames look like the runtime's ("(fuzz_trace+0x2a3b4c)", no name, no source line). The
    executable is still on disk: llvm-symbolizer reads its debug information now, and a frame
    with a source line is lmscope's again. Frames it cannot name stay as they were."""
    bare = [f for f in stack if not f.function and not f.has_source and f.offset
            and ".so" not in os.path.basename(f.where) and os.path.isfile(f.where)]
    symbolizer = shutil.which("llvm-symbolizer") or next(iter(glob.glob("/usr/lib/llvm-*/bin/llvm-symbolizer")), None)
    for f in bare if symbolizer else []:
        try:
            out = subprocess.run([symbolizer, "--obj=" + f.where, f.offset], capture_output=True,
                                 text=True, timeout=60).stdout.splitlines()
        except (OSError, subprocess.SubprocessError):
            return
        if len(out) >= 2 and not out[1].startswith("??"):
            f.function, f.has_source = out[0].strip(), True
            f.line += f"  [llvm-symbolizer: {out[0].strip()} {out[1].strip()}]"


def first_real(stack):
    """The index of the first frame of the code under test, or None."""
    return next((i for i, f in enumerate(stack) if not f.is_runtime()), None)


def kind_of(lines, stacks):
    """(kind, the stack that shows it), or (None, None) when the report holds no finding."""
    for pattern, name in HEADERS:
        for line in lines:
            m = pattern.search(line)
            if m:
                return name or m.group(1), stacks[0] if stacks else None
    for stack in stacks:
        for frame in stack:
            if frame.function in LIBFUZZER_FRAMES:
                return LIBFUZZER_FRAMES[frame.function], stack
    for i, line in enumerate(lines):
        if RSS_PROFILE in line:
            # The profile's contexts, largest first: when one holds most of the live heap, its
            # allocating stack is what went over the limit.
            for j in range(i + 1, len(lines)):
                m = RSS_CONTEXT.match(lines[j])
                if m:
                    top = stacks_of(lines[j + 1:])
                    if int(m.group(1)) >= 50 and top:
                        return "out-of-memory over the RSS limit", top[0]
                    break
            return "out-of-memory over the RSS limit", None
    return None, None


def triage(text):
    """(owner, what) for one report."""
    return judge(text)[:2]


def judge(text):
    """(owner, what, the stack it was judged by, or None)."""
    lines = text.splitlines()
    stacks = stacks_of(lines)
    kind, stack = kind_of(lines, stacks)
    if kind is None:
        return "none", "no finding (warnings only)" if text.strip() else "no finding (empty)", None
    if stack is None:
        return "lmscope", f"{kind} without a stack", None
    if kind == "leak":
        for s in stacks:
            symbolize(s)
        tops = [first_real(s) for s in stacks]
        if all(i is not None and s[i].in_libhdf5() for s, i in zip(stacks, tops)):
            return "libhdf5", f"leak allocated inside libhdf5 ({stacks[0][tops[0]].describe(stacks[0][tops[0] + 1:])})", stack
        return "lmscope", "leak of lmscope's memory", stack
    symbolize(stack)
    i = first_real(stack)
    if i is None:
        return "lmscope", f"{kind} with only the sanitizer's frames", stack
    owner = "libhdf5" if stack[i].in_libhdf5() else "lmscope"
    return owner, f"{kind} in {stack[i].describe(stack[i + 1:])}", stack


SHOWN_FRAMES = 16   # of a stack judged lmscope's: what CI's log shows of it


def main(paths):
    status = 0
    for path in paths:
        stack = None
        try:
            with open(path, errors="replace") as f:
                owner, what, stack = judge(f.read())
        except OSError as e:
            owner, what = "lmscope", f"cannot read the report: {e.strerror}"
        print(f"{path}: {owner}: {what}")
        if owner == "lmscope" and stack:
            # CI keeps only the log: the stack it was judged by, so the finding can be read there.
            for frame in stack[:SHOWN_FRAMES]:
                print(f"    {frame.line}")
        status |= owner == "lmscope"
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
