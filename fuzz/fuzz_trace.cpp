// The trace reader: the input is opened as a trace and every hook of every step read (kv
// caches rebuilt), as lmscope-diff would. libhdf5 1.10.8's own parser bugs show up here too
// (docs/trace-format.md, "Traces from an untrusted source"): a report inside libhdf5 is
// theirs. Seeds: fuzz/corpus/trace.
#include <stdexcept>

#include "fuzz/fuzz_input.h"
#include "trace/trace_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const lmscope::TraceReader r(fuzz::write("trace.h5", data, size));
    r.root_attrs_json();
    for (int step = 0; step < r.n_steps(); ++step)
      for (const std::string& hook : r.hooks(step)) {
        try {
          r.read(step, hook);
        } catch (const std::exception&) {
        }
      }
    if (r.has_generated_ids()) r.generated_ids();
  } catch (const std::exception&) {
  }
  return 0;
}
