"""fuzz/triage.py on what the sanitizers wrote while fuzz_trace ran (tests/fuzz/reports/:
report.* are the report.<pid> files scripts/fuzz.sh collects, stderr.* a reproducer re-run by
hand), and on variants of one of them that move the faulting call into lmscope or behind
another interceptor. Run: python3 -m pytest -q tests/fuzz (ctest: fuzz_triage)."""
import importlib.util
import os
import re
import shutil
import subprocess

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REPORTS = os.path.join(ROOT, "tests", "fuzz", "reports")

spec = importlib.util.spec_from_file_location("triage", os.path.join(ROOT, "fuzz", "triage.py"))
triage = importlib.util.module_from_spec(spec)
spec.loader.exec_module(triage)


def report(name):
    with open(os.path.join(REPORTS, name)) as f:
        return f.read()


# report.overflow-in-libhdf5-via-memcpy: libhdf5 (#1-#4, called by lmscope's has_attr at #5)
# reads past a block inside ASan's memcpy interceptor (#0).
MEMCPY = report("report.overflow-in-libhdf5-via-memcpy")
LIBHDF5_FRAMES = re.compile(r"^    #[1-4] .*libhdf5_serial.*\n", re.M)


@pytest.mark.parametrize("name, what", [
    ("report.overflow-in-libhdf5-via-memcpy", "heap-buffer-overflow in ? under H5O__msg_iterate_real"),
    ("report.segv-in-libhdf5", "SEGV in H5HG_read"),
    ("report.timeout-in-libhdf5", "timeout in ? under H5C_protect"),   # libFuzzer's alarm stack
    ("stderr.oom-in-libhdf5-vlen", "out-of-memory in ? under H5FL_blk_malloc"),
])
def test_recorded_libhdf5_faults_are_libhdf5s(name, what):
    assert triage.triage(report(name)) == ("libhdf5", what + " (libhdf5_serial.so.103)")


def test_a_process_that_only_warned_is_no_finding():
    text = report("report.warnings-only")
    assert "WARNING: AddressSanitizer failed to allocate" in text
    assert triage.triage(text)[0] == "none"
    assert triage.triage("")[0] == "none"


def test_a_libhdf5_strdup_overflow_is_libhdf5s():
    # CI's finding: the overflow reported inside ASan's strdup interceptor, which libhdf5 called.
    text = MEMCPY.replace("in __interceptor_memcpy (", "in strdup (")
    assert "in strdup (" in text
    assert triage.triage(text) == (
        "libhdf5", "heap-buffer-overflow in ? under H5O__msg_iterate_real (libhdf5_serial.so.103)")


@pytest.mark.parametrize("interceptor", ["__interceptor_memcpy", "strdup", "__interceptor_strlen"])
def test_the_same_fault_called_from_lmscope_is_lmscopes(interceptor):
    # libhdf5's frames removed: the interceptor's caller is lmscope::h5::Object::has_attr.
    text = LIBHDF5_FRAMES.sub("", MEMCPY).replace("in __interceptor_memcpy (", f"in {interceptor} (")
    assert "lmscope::h5::Object::has_attr" in text.split("allocated by")[0]
    owner, said = triage.triage(text)
    assert owner == "lmscope"
    assert said.startswith("heap-buffer-overflow in lmscope::h5::Object::has_attr(")


def test_a_timeout_in_lmscope_is_lmscopes():
    # The alarm's stack with libhdf5's frames taken out: the loop is in lmscope's reader.
    text = report("report.timeout-in-libhdf5")
    ours = re.sub(r"^    #\d+ .*libhdf5_serial.*\n", "", text, flags=re.M)
    owner, said = triage.triage(ours)
    assert owner == "lmscope" and said.startswith("timeout in lmscope::")


def test_an_rss_limit_is_judged_by_the_allocation_that_holds_most_of_the_heap():
    # CI's finding: libhdf5 allocated 4.26 GB (99% of the live heap) converting a damaged
    # variable-length attribute that lmscope's attr_string asked for.
    text = report("report.rss-limit-in-libhdf5-vlen")
    assert triage.triage(text) == (
        "libhdf5", "out-of-memory over the RSS limit in ? under H5FL_blk_malloc (libhdf5_serial.so.103)")
    # The same allocation made by lmscope itself: lmscope's.
    ours = re.sub(r"^    #\d+ .*libhdf5_serial.*\n", "", text, flags=re.M)
    owner, said = triage.triage(ours)
    assert owner == "lmscope" and said.startswith("out-of-memory over the RSS limit in lmscope::h5::Object::attr_string(")
    # No allocation holds most of the heap: no culprit, lmscope's.
    spread = text.replace("4261416968 byte(s) (99%)", "1261416968 byte(s) (29%)")
    assert triage.triage(spread) == ("lmscope", "out-of-memory over the RSS limit without a stack")


def test_an_rss_limit_without_a_stack_is_lmscopes():
    text = "==1==WARNING: x\nLive Heap Allocations: 26377248 bytes in 4154 chunks\n"
    assert triage.triage(text) == ("lmscope", "out-of-memory over the RSS limit without a stack")


def test_the_script_fails_only_for_lmscopes(tmp_path, capsys):
    ours = tmp_path / "report.1"
    ours.write_text(LIBHDF5_FRAMES.sub("", MEMCPY))
    theirs = os.path.join(REPORTS, "report.overflow-in-libhdf5-via-memcpy")
    quiet = os.path.join(REPORTS, "report.warnings-only")
    assert triage.main([theirs, quiet]) == 0
    assert triage.main([theirs, str(ours)]) == 1
    assert triage.main([str(tmp_path / "missing")]) == 1
    out = capsys.readouterr().out
    assert f"{ours}: lmscope: heap-buffer-overflow in lmscope::h5::Object::has_attr(" in out
    assert "cannot read the report" in out


def test_frames_printed_without_symbols_are_named_from_the_executable(tmp_path):
    # At the RSS limit the sanitizer may fail to start its symbolizer: lmscope's frames then
    # read "(fuzz_trace+0x...)", like the runtime's. triage names them from the executable's
    # debug information, so the allocation is lmscope's again, not "only the sanitizer's".
    compiler = shutil.which("cc") or pytest.skip("no C compiler")
    src = tmp_path / "reader.c"
    src.write_text("int read_dataset(int n) { return n * 2; }\nint main(void) { return read_dataset(1); }\n")
    exe = tmp_path / "fuzz_like"
    subprocess.run([compiler, "-g", "-O0", "-o", str(exe), str(src)], check=True)
    addr = next(line.split()[0] for line in subprocess.run(["nm", str(exe)], capture_output=True, text=True,
                                                           check=True).stdout.splitlines()
                if line.endswith(" read_dataset"))
    text = report("report.rss-limit-in-libhdf5-vlen")
    text = re.sub(r"^    #\d+ .*libhdf5_serial.*\n", "", text, flags=re.M)
    # lmscope's frames as an unsymbolized report prints them: module and offset only.
    unnamed = re.sub(r"^(    #\d+ 0x[0-9a-f]+) in lmscope::.*$", rf"\1  ({exe}+0x{int(addr, 16):x})", text, flags=re.M)
    unnamed = re.sub(r"^(    #\d+ 0x[0-9a-f]+) in LLVMFuzzerTestOneInput .*$", rf"\1  ({exe}+0x{int(addr, 16):x})",
                     unnamed, flags=re.M)
    assert "lmscope::" not in unnamed.split("Live Heap")[1]
    owner, said = triage.triage(unnamed)
    assert (owner, said) == ("lmscope", "out-of-memory over the RSS limit in read_dataset (fuzz_like)")
    # The executable gone: nothing to name them from, and nothing to blame but lmscope.
    exe.unlink()
    assert triage.triage(unnamed) == ("lmscope", "out-of-memory over the RSS limit with only the sanitizer's frames")


def test_the_script_shows_the_stack_of_a_finding_that_is_lmscopes(tmp_path, capsys):
    ours = tmp_path / "report.2"
    ours.write_text(LIBHDF5_FRAMES.sub("", MEMCPY))
    assert triage.main([str(ours)]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^    #\d+ 0x[0-9a-f]+ in lmscope::h5::Object::has_attr\(", out, re.M)
