#include "compare/distill.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "compare/distribution.h"
#include "io/format_number.h"

namespace lmscope {

void check_temperatures(const std::vector<double>& temps) {
  if (temps.empty()) throw std::runtime_error("--kl-temperature: no temperature given");
  for (double T : temps)
    if (!(T > 0) || !std::isfinite(T)) throw std::runtime_error("--kl-temperature: " + fmt("%g", T) + " is not a positive number");
}

DistillReport distill(const HookData& tl, const HookData& sl, const HookData& tids, const HookData& sids,
                      const std::vector<double>& temps, int k) {
  check_temperatures(temps);
  if (tl.shape.size() != 3 || sl.shape.size() != 3) throw std::runtime_error("logits must be [B,T,V]");
  if (tl.shape[2] != sl.shape[2])
    throw std::runtime_error("different vocabularies: the student's logits have V=" + std::to_string(sl.shape[2]) +
                             ", the teacher's V=" + std::to_string(tl.shape[2]));
  if (tids.shape != sids.shape || tids.shape.size() != 2)
    throw std::runtime_error("different token ids: the student has tokens.input_ids " + shape_str(sids.shape) +
                             ", the teacher " + shape_str(tids.shape));
  for (size_t i = 0; i < tids.values.size(); ++i)
    if (tids.values[i] != sids.values[i])
      throw std::runtime_error("different token ids: row " + std::to_string(int64_t(i) / tids.shape[1]) + " position " +
                               std::to_string(int64_t(i) % tids.shape[1]) + " is " + fmt("%g", sids.values[i]) +
                               " in the student, " + fmt("%g", tids.values[i]) + " in the teacher");
  if (tl.shape[0] != tids.shape[0] || tl.shape[1] != tids.shape[1] || sl.shape != tl.shape)
    throw std::runtime_error("logits " + shape_str(tl.shape) + " / " + shape_str(sl.shape) + " do not match the tokens " +
                             shape_str(tids.shape));
  DistillReport r;
  r.vocab = tl.shape[2];
  const int64_t B = tl.shape[0], T = tl.shape[1], V = r.vocab;
  for (double temp : temps) {
    DistillAtT at;
    at.T = temp;
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < T; ++t) {
        const size_t off = size_t((b * T + t) * V);
        const auto lp = log_softmax_at(tl.values.data() + off, V, temp);
        const auto lq = log_softmax_at(sl.values.data() + off, V, temp);
        DistillPosition p;
        p.row = b, p.t = t;
        p.kl = kl_divergence(lp, lq);
        p.kl_t2 = p.kl * temp * temp;
        p.teacher_entropy = entropy(lp), p.student_entropy = entropy(lq);
        p.teacher_top = top_k(lp, k), p.student_top = top_k(lq, k);
        const double n = double(B * T);
        at.mean_kl += p.kl / n, at.mean_kl_t2 += p.kl_t2 / n;
        at.mean_teacher_entropy += p.teacher_entropy / n, at.mean_student_entropy += p.student_entropy / n;
        at.positions.push_back(std::move(p));
      }
    r.temps.push_back(std::move(at));
  }
  return r;
}

namespace {
std::string tops(const std::vector<std::pair<int32_t, double>>& v) {
  std::string s;
  for (const auto& [id, p] : v) {
    char b[48];
    std::snprintf(b, sizeof b, "%s%d:%.3f", s.empty() ? "" : " ", id, p);
    s += b;
  }
  return s;
}
}  // namespace

std::string distill_text(const DistillReport& r, const std::string& teacher, const std::string& student) {
  std::ostringstream o;
  o << "teacher (reference): " << teacher << "\nstudent: " << student << "\n"
    << r.temps.front().positions.size() << " positions, vocabulary " << r.vocab
    << "; KL(teacher || student) of softmax(logits / T), in nats, mean over positions\n\n";
  char line[256];
  std::snprintf(line, sizeof line, "%8s %12s %12s %12s %12s\n", "T", "KL", "KL x T^2", "H(teacher)", "H(student)");
  o << line;
  for (const DistillAtT& at : r.temps) {
    std::snprintf(line, sizeof line, "%8g %12.6g %12.6g %12.4f %12.4f\n", at.T, at.mean_kl, at.mean_kl_t2,
                  at.mean_teacher_entropy, at.mean_student_entropy);
    o << line;
  }
  for (const DistillAtT& at : r.temps) {
    o << "\nT = " << fmt("%g", at.T) << ": per position (top: id:probability at T)\n";
    for (const DistillPosition& p : at.positions) {
      std::snprintf(line, sizeof line, "  row %lld t=%-3lld KL x T^2 %-10.4g H %.3f / %.3f  ", (long long)p.row,
                    (long long)p.t, p.kl_t2, p.teacher_entropy, p.student_entropy);
      o << line << "teacher " << tops(p.teacher_top) << " | student " << tops(p.student_top) << "\n";
    }
  }
  return o.str();
}

std::string distill_json(const DistillReport& r, const std::string& teacher, const std::string& student) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["teacher"] = teacher;
  j["student"] = student;
  j["vocab"] = r.vocab;
  j["temperatures"] = ordered_json::array();
  for (const DistillAtT& at : r.temps) {
    ordered_json jt = {{"T", at.T}, {"mean_kl", at.mean_kl}, {"mean_kl_t2", at.mean_kl_t2},
                       {"mean_teacher_entropy", at.mean_teacher_entropy}, {"mean_student_entropy", at.mean_student_entropy}};
    jt["positions"] = ordered_json::array();
    for (const DistillPosition& p : at.positions) {
      auto top = [](const std::vector<std::pair<int32_t, double>>& v) {
        ordered_json a = ordered_json::array();
        for (const auto& [id, pr] : v) a.push_back({{"id", id}, {"p", pr}});
        return a;
      };
      jt["positions"].push_back({{"row", p.row}, {"t", p.t}, {"kl", p.kl}, {"kl_t2", p.kl_t2},
                                 {"teacher_entropy", p.teacher_entropy}, {"student_entropy", p.student_entropy},
                                 {"teacher_top", top(p.teacher_top)}, {"student_top", top(p.student_top)}});
    }
    j["temperatures"].push_back(jt);
  }
  return j.dump(1);
}

}  // namespace lmscope
