// The sampling audit of one step offered to the trace as the sample.* hooks ([B,N] tensors,
// docs/trace-format.md "Sampling audit"), with the settings as attributes of the step's group.
#pragma once
#include <vector>

#include "generate/sampler.h"
#include "trace/trace.h"

namespace lmscope {

void offer_sample_audit(Trace& trace, const std::vector<SampleAudit>& audits, const std::vector<char>& finished,
                        const SamplingConfig& cfg);

}  // namespace lmscope
