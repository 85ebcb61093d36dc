// Distillation's loss term, measured on two traces over the same tokens: the teacher's and the
// student's next-token distributions softened by a temperature T,
//
//   p = softmax(teacher_logits / T)     q = softmax(student_logits / T)
//   term_t = KL(p || q) * T^2           (per position; T^2 keeps the gradient's size as T grows)
//
// whose mean over positions is torch.nn.functional.kl_div(log_softmax(s/T), softmax(t/T),
// reduction="batchmean") * T**2 on logits [positions, V] (golden/make_distill_refs.py). Also the
// entropy of each at T (how flat T made it) and the top-k of each.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "trace/trace_reader.h"

namespace lmscope {

struct DistillPosition {
  int64_t row = 0, t = 0;
  double kl = 0;                        // KL(p || q), nats
  double kl_t2 = 0;                     // kl * T^2
  double teacher_entropy = 0, student_entropy = 0;
  std::vector<std::pair<int32_t, double>> teacher_top, student_top;   // (id, probability at T)
};

struct DistillAtT {
  double T = 1;
  std::vector<DistillPosition> positions;
  double mean_kl = 0, mean_kl_t2 = 0, mean_teacher_entropy = 0, mean_student_entropy = 0;
};

struct DistillReport {
  int64_t vocab = 0;
  std::vector<DistillAtT> temps;
};

// logits [B,T,V] of each side, ids [B,T] of each side. Throws std::runtime_error with one line
// for temperatures <= 0, different vocabularies, or different token ids (or shapes).
DistillReport distill(const HookData& teacher_logits, const HookData& student_logits, const HookData& teacher_ids,
                      const HookData& student_ids, const std::vector<double>& temperatures, int top_k);

// Checks the temperatures: each > 0 and finite ("--kl-temperature: 0 is not > 0").
void check_temperatures(const std::vector<double>& temperatures);

std::string distill_text(const DistillReport& r, const std::string& teacher, const std::string& student);
std::string distill_json(const DistillReport& r, const std::string& teacher, const std::string& student);

}  // namespace lmscope
