// Interventions whose values live in Python (docs/python.md): a run_with_cache cache as the
// source of patch / mean / add, a numpy vector for add. The pure-Python layer passes each such
// intervention as (spec text, {"source": run, "minus": run, "vector": array}), where a run is
// {"hooks": {name: array}, "config_json": ..., "prompt_lengths": [...], "padding_side": ...};
// this turns it into the InterventionSpec that Interventions applies (intervene/interventions.h),
// copying only the hooks the spec's site names.
#pragma once
#include <pybind11/pybind11.h>

#include "intervene/interventions.h"
#include "model/config.h"

namespace lmscope::py {

// A spec string, or a (spec string, dict) pair. Throws std::invalid_argument (ValueError) with
// one line for a malformed spec or a value of the wrong kind.
InterventionSpec spec_from_python(const pybind11::handle& item, const ModelConfig& cfg);

}  // namespace lmscope::py
