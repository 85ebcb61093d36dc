// lmscope-diff A.h5 B.h5: compares trace A against the reference trace B (docs/tolerances.md).
// --hooks / --layers select hooks as lmscope-trace does; a selected hook the reference holds and
// A does not fails, one only A holds is noted (compare/compare_step.h).
// Exit status: 0 all pass, 1 a comparison failed, 2 bad input (always one line on stderr).
// Alignment (compare/align.h): --row N compares row N of a padded batch, its pads stripped
// through the masks, with a solo run; cached against uncached steps are compared at the last
// position (automatic when the traces differ in use_cache).
// --kl-temperature T[,T2...]: distillation's view instead (compare/distill.h): B is the teacher,
// A the student; per position KL(softmax(B/T) || softmax(A/T)) x T^2, entropies and top-k of
// step 0's logits over the same tokens.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>
#include <nlohmann/json.hpp>

#include "compare/align.h"
#include "compare/compare.h"
#include "compare/distill.h"
#include "compare/report.h"
#include "intervene/record.h"
#include "trace/select.h"
#include "trace/trace_reader.h"
#include "tools/cli_common.h"
#include "tools/contained.h"

int main(int argc, char** argv) {
  using namespace lmscope;
  CLI::App app{"Compare trace A against reference trace B, hook by hook (B is the reference)"};
  std::string path_a, path_b, tol_file, hooks, layers, steps;
  bool json = false, all = false, last_position = false, no_align = false;
  int row = -1, ref_row = -1;
  app.add_option("A", path_a, "trace to check")->required();
  app.add_option("B", path_b, "reference trace")->required();
  app.add_flag("--json", json, "print one JSON object instead of the table");
  app.add_option("--tolerances", tol_file, "JSON {\"glob\": {\"atol\": x, \"rtol\": y}} checked before the defaults");
  // lmscope-trace's --hooks / --layers, same meaning (trace/hook_set.h), applied to both traces:
  // a partial trace is diffed against a full golden by selecting what it holds.
  app.add_option("--hooks", hooks, "comma-separated globs of hook names, as lmscope-trace's (docs/hooks.md)");
  app.add_option("--layers", layers, "layer ranges for layers.* and kv.* hooks, as lmscope-trace's, e.g. 0-3,7");
  app.add_option("--steps", steps, "steps to compare, e.g. 0-3,7");
  app.add_flag("--all", all, "one line per (step, hook) instead of per hook");
  app.add_option("--row", row, "compare row N of A, its pads stripped through A's masks (a padded batch row vs a solo run)");
  app.add_option("--ref-row", ref_row, "the reference's row for --row (default: 0 if it has one row, else --row)");
  app.add_flag("--last-position", last_position,
               "where a step's T differs (cached vs uncached), compare the last T rows, and kv.* with the uncached "
               "k_rope / v (automatic when A and the reference differ in use_cache)");
  app.add_flag("--no-align", no_align, "never align automatically");
  std::vector<double> temperatures;
  int top_k = 3;
  app.add_option("--kl-temperature", temperatures,
                 "distillation: B is the teacher, A the student; KL x T^2 of step 0's logits at each T (e.g. 1,4,8)")
      ->delimiter(',');
  app.add_option("--top-k", top_k, "with --kl-temperature: how many top ids of each side to show")->check(CLI::Range(1, 100));
  if (auto code = cli::parse(app, argc, argv, "lmscope-diff")) return *code;
  h5::set_read_deadline_tool("lmscope-diff", 2);   // bad input, as for any unreadable trace: 1 means "traces differ"

  // A crash inside libhdf5 on a damaged trace: one line from the parent, exit 2 (tools/contained.h).
  return cli::run_contained("lmscope-diff", path_a + "' or '" + path_b, 2, [&]() -> int {
    CompareOptions opts;
    std::unique_ptr<TraceReader> a, b;
    try {
      if (!tol_file.empty()) opts.tolerances.load_overrides(tol_file);
      if (!hooks.empty()) opts.hook_globs = split_list(hooks);
      opts.layers = layers;
      if (!steps.empty()) opts.steps = parse_ranges(steps);
      a = std::make_unique<TraceReader>(path_a);
      b = std::make_unique<TraceReader>(path_b);
    } catch (const std::exception& e) {
      std::cerr << "lmscope-diff: error: " << e.what() << "\n";
      return 2;
    }
    if (!temperatures.empty()) {
      try {
        check_temperatures(temperatures);
        auto need = [](const TraceReader& t, const std::string& hook) {
          if (!t.has_hook(0, hook)) throw std::runtime_error("'" + t.path() + "' step 0 has no " + hook);
          return t.read(0, hook);
        };
        const DistillReport r = distill(need(*b, "logits"), need(*a, "logits"), need(*b, "tokens.input_ids"),
                                        need(*a, "tokens.input_ids"), temperatures, top_k);
        std::cout << (json ? distill_json(r, path_b, path_a) + "\n" : distill_text(r, path_b, path_a));
        return 0;
      } catch (const std::exception& e) {
        std::cerr << "lmscope-diff: error: " << e.what() << "\n";
        return 2;
      }
    }
    AlignOptions al;
    std::string align_note;
    try {
      if (ref_row >= 0 && row < 0) throw std::runtime_error("--ref-row needs --row");
      if (row >= 0) {
        auto rows_of = [](const TraceReader& t) -> int64_t {
          if (t.has_generated_ids()) return t.generated_ids().shape.at(0);
          if (t.n_steps() > 0 && t.has_hook(0, "tokens.input_ids")) return t.read(0, "tokens.input_ids").shape.at(0);
          return 1;
        };
        const int64_t ra = rows_of(*a), rb = rows_of(*b);
        al.row_a = row;
        al.row_ref = ref_row >= 0 ? ref_row : (rb == 1 ? 0 : row);
        if (al.row_a >= ra) throw std::runtime_error("--row " + std::to_string(row) + ": A has " + std::to_string(ra) + " rows");
        if (al.row_ref >= rb)
          throw std::runtime_error("--ref-row " + std::to_string(al.row_ref) + ": the reference has " + std::to_string(rb) + " rows");
        align_note = "row " + std::to_string(al.row_a) + " of A (pads stripped) vs row " + std::to_string(al.row_ref) +
                     " of the reference";
      }
      bool auto_last = false;
      if (!no_align && !last_position && a->has_root_attr("use_cache") && b->has_root_attr("use_cache"))
        auto_last = a->root_attr_int("use_cache") != b->root_attr_int("use_cache");
      al.last_position = last_position || auto_last;
      if (al.last_position)
        align_note += std::string(align_note.empty() ? "" : "; ") +
                      "cached vs uncached: last position of each step, kv.* vs the uncached k_rope / v" +
                      (auto_last ? " (automatic: use_cache differs)" : "");
    } catch (const std::exception& e) {
      std::cerr << "lmscope-diff: error: " << e.what() << "\n";
      return 2;
    }
    CompareReport rep;
    try {
      rep = compare_aligned(*a, *b, opts, al);
    } catch (const std::exception& e) {
      // A trace that opened but cannot be read through (a corrupt dataset) is bad input too.
      std::cerr << "lmscope-diff: error: " << e.what() << "\n";
      return 2;
    }
    if (json) {
      std::string j = report_json(rep);
      if (!align_note.empty())   // one more field, first: how the traces were aligned
        j = "{\"alignment\": " + nlohmann::json(align_note).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + ",\n " + j.substr(1);
      std::cout << j << "\n";
    } else {
      if (!align_note.empty()) std::cout << "aligned: " << align_note << "\n";
      // A counterfactual pair (docs/interventions.md): say which side was edited, and how.
      for (const TraceReader* t : {a.get(), b.get()})
        if (const std::string iv = interventions_line(*t); !iv.empty()) std::cout << t->path() << ": " << iv << "\n";
      std::cout << report_text(rep, all);
    }
    std::cout.flush();
    return rep.pass ? 0 : 1;
  });
}
