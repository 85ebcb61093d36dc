// lmscope._core: the engine itself for Python (docs/python.md, "The engine in Python"). One
// class, Engine: a model opened as the tools open it (runs/open_model.h), its tokenizer, and
// run(), the one way Python runs the model: generate() with HF's semantics (run_traced, as
// lmscope-trace runs it), hook tensors kept in memory (ArraySink) and/or written to a trace
// file, edits by spec interventions and Python functions (PythonHooks). The friendly calls
// (run_with_cache, run_with_hooks, generate, trace) are python/lmscope/__init__.py.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "experiments/patching.h"
#include "grad/grad_run.h"
#include "intervene/record.h"
#include "intervene/spec.h"
#include "io/text_file.h"
#include "model/weights.h"
#include "report/report_html.h"
#include "python/src/array_sink.h"
#include "python/src/memory_sources.h"
#include "python/src/python_hooks.h"
#include "runs/open_model.h"
#include "tokenizer/chat.h"
#include "tokenizer/corpus.h"
#include "tokenizer/encode_trace.h"
#include "trace/hooks.h"

namespace pyb = pybind11;
using namespace lmscope;

namespace {

// A held tensor as a numpy array that owns its buffer (no second copy).
pyb::array to_numpy(py::HeldTensor&& t) {
  if (t.ids) {
    auto* v = new std::vector<int32_t>(std::move(t.i32));
    pyb::capsule owner(v, [](void* p) { delete static_cast<std::vector<int32_t>*>(p); });
    return pyb::array_t<int32_t>(t.shape, v->data(), owner);
  }
  auto* v = new std::vector<float>(std::move(t.f32));
  pyb::capsule owner(v, [](void* p) { delete static_cast<std::vector<float>*>(p); });
  return pyb::array_t<float>(t.shape, v->data(), owner);
}

SamplingConfig sampling_from(const pyb::dict& d) {
  SamplingConfig sc;
  for (auto item : d) {
    const std::string k = pyb::str(item.first);
    // A value of the wrong type (seed=-1, seed="x", top_k=2**40): ValueError naming the
    // setting, not pybind11's "Unable to cast Python instance to C++ type".
    auto get = [&](auto& field, const char* expected) {
      try {
        field = item.second.cast<std::remove_reference_t<decltype(field)>>();
      } catch (const pyb::cast_error&) {
        throw pyb::value_error(k + "=" + std::string(pyb::repr(item.second)) + ": expected " + expected);
      }
    };
    if (k == "do_sample") get(sc.do_sample, "True or False");
    else if (k == "temperature") get(sc.temperature, "a number");
    else if (k == "top_k") get(sc.top_k, "an integer (0: off)");
    else if (k == "top_p") get(sc.top_p, "a number");
    else if (k == "min_p") get(sc.min_p, "a number");
    else if (k == "repetition_penalty") get(sc.repetition_penalty, "a number");
    else if (k == "seed") get(sc.seed, "an integer from 0 to 2**64 - 1");
    else if (k == "audit_top") get(sc.audit_top, "an integer");
    else throw pyb::value_error("unknown sampling setting '" + k + "'");
  }
  validate(sc);   // std::invalid_argument (ValueError) on what HF rejects
  return sc;
}

// A call's prompts, one per batch row: token ids, or a text to encode.
using Prompts = std::vector<std::variant<std::vector<int32_t>, std::string>>;

// What Engine::run takes, field by field (Model._run in python/lmscope/__init__.py fills it).
struct RunOptions {
  Prompts prompts;
  bool add_special = true;   // the tokenizer's BOS etc. (false for a chat template's text)
  std::string names;         // hooks to keep or write (globs, HookSet's grammar); "" for none
  int keep_steps = 0;        // steps whose hooked tensors come back as arrays (ArraySink)
  std::string padding_side = "left";
  int max_new_tokens = 1;
  bool use_cache = true;
  pyb::dict sampling;                            // sampling_from's keys
  std::optional<std::vector<int32_t>> eos_ids;   // none: the model's
  std::vector<std::string> stop;                 // stop strings
  pyb::list specs;                               // intervention specs (py::spec_from_python)
  pyb::list hooks;                               // (site, function) pairs: Python edits
  std::string out;                               // a trace file to write; "" for none
  pyb::object stream = pyb::none();              // stream(step, tokens) after each step, or None
  int compress = 0;                              // the trace's gzip level
};

class Engine {
 public:
  Engine(const std::string& path, const std::string& backend, const std::string& dtype,
         const std::string& cpu_activations, int pad_id) {
    if (!std::filesystem::exists(path)) {
      PyErr_SetString(PyExc_FileNotFoundError, ("no such model file or directory: '" + path + "'").c_str());
      throw pyb::error_already_set();
    }
    m_ = std::make_unique<OpenModel>();
    try {
      open_model(*m_, ModelOptions{path, backend, dtype, cpu_activations, pad_id}, "python: lmscope.Model('" + path + "')",
                 std::string("lmscope ") + LMSCOPE_VERSION);
    } catch (const std::exception& e) {
      throw pyb::value_error(e.what());   // a damaged or unsupported model: bad input
    }
  }

  pyb::dict info() const {
    const ModelConfig& c = m_->loaded.cfg;
    pyb::dict d;
    d["num_layers"] = c.num_layers;
    d["hidden_size"] = c.hidden_size;
    d["num_heads"] = c.num_heads;
    d["num_kv_heads"] = c.num_kv_heads;
    d["head_dim"] = c.head_dim;
    d["intermediate_size"] = c.intermediate_size;
    d["vocab_size"] = c.vocab_size;
    d["source_kind"] = m_->loaded.source_kind;
    d["backend"] = m_->backend->name();
    d["dtype"] = m_->backend->compute_dtype();
    d["eos_ids"] = m_->special.eos_ids;
    d["pad_id"] = m_->special.pad_id;
    d["has_tokenizer"] = bool(m_->tokenizer);
    d["config_json"] = c.json_text;
    return d;
  }

  const tok::Tokenizer& tokenizer() const {
    if (!m_->tokenizer) throw pyb::value_error("no tokenizer beside the model '" + m_->ctx.model_path + "': give ids");
    return *m_->tokenizer;
  }

  // (ids, the encoding as lmscope-bpe --json writes it: words, merges, tokens)
  std::pair<std::vector<int32_t>, std::string> encode(const std::string& text, bool add_special) const {
    EncodeTrace et;
    std::vector<int32_t> ids = tokenizer().encode(text, add_special, &et);
    return {ids, trace_to_json(tokenizer(), et)};
  }
  std::string decode(const std::vector<int32_t>& ids, bool skip_special) const {
    return tokenizer().decode(ids, skip_special);
  }
  std::vector<std::string> pieces(const std::vector<int32_t>& ids) const {
    std::vector<std::string> out;
    for (int32_t id : ids) out.push_back(tokenizer().token_display(id));
    return out;
  }
  std::string chat(const std::vector<std::pair<std::string, std::string>>& messages, bool add_generation_prompt,
                   const std::string& format) const {
    std::vector<tok::ChatMessage> ms;
    for (const auto& [role, content] : messages) ms.push_back({role, content});
    return tok::format_chat(tokenizer(), ms, add_generation_prompt, tok::parse_chat_format(format));
  }

  // A call's prompts as ids: a text encoded by the model's tokenizer (its merges appended to
  // `encodings` when given), ids as given; each checked as the tools check theirs
  // (runs/open_model.h): std::invalid_argument, which pybind11 raises as ValueError.
  std::vector<std::vector<int32_t>> prompt_ids(const Prompts& prompts, bool add_special,
                                               std::vector<EncodeTrace>* encodings) const {
    std::vector<std::vector<int32_t>> out;
    for (const auto& p : prompts) {
      if (const std::string* text = std::get_if<std::string>(&p)) {
        EncodeTrace et;
        out.push_back(encode_prompt(tokenizer(), *text, add_special, et, "the prompt"));
        if (encodings) encodings->push_back(std::move(et));
      } else {
        out.push_back(std::get<std::vector<int32_t>>(p));
      }
      check_prompt_ids(out.back(), m_->loaded.cfg.vocab_size);
    }
    if (out.empty()) throw std::invalid_argument("no prompt");
    return out;
  }

  // The one run: see python/lmscope/__init__.py (Model._run) for what each caller passes.
  pyb::dict run(const RunOptions& o) {
    const ModelConfig& cfg = m_->loaded.cfg;
    GenerateOptions opt;
    std::vector<EncodeTrace> encodings;   // the run's /tokenizer record, handed over under run_mutex_
    opt.prompts = prompt_ids(o.prompts, o.add_special, &encodings);
    if (o.max_new_tokens < 1)
      throw pyb::value_error("max_new_tokens must be at least 1, got " + std::to_string(o.max_new_tokens));
    opt.padding_side = parse_padding_side(o.padding_side);
    opt.max_new_tokens = o.max_new_tokens;
    opt.use_cache = o.use_cache;
    opt.sampling = sampling_from(o.sampling);
    opt.pad_id = m_->special.pad_id;
    opt.eos_ids = o.eos_ids ? *o.eos_ids : m_->special.eos_ids;
    opt.stop_strings = o.stop;
    if (!o.stop.empty()) {
      const tok::Tokenizer* tk = &tokenizer();
      opt.token_bytes = [tk](int32_t id) { return id >= 0 && id < tk->vocab_size() ? tk->token_bytes(id) : std::string(); };
    }

    // Edits: spec interventions first, then the Python functions (python_hooks.h).
    std::vector<InterventionSpec> parsed;
    for (const pyb::handle s : o.specs) parsed.push_back(py::spec_from_python(s, cfg));   // invalid_argument: ValueError
    std::unique_ptr<Interventions> interventions;
    if (!parsed.empty()) interventions = std::make_unique<Interventions>(std::move(parsed), cfg);   // ValueError
    std::vector<py::PythonHook> fns;
    for (const pyb::handle item : o.hooks) {
      const auto pair = item.cast<std::pair<std::string, pyb::function>>();
      fns.push_back(python_hook(pair.first, pair.second));
    }
    std::unique_ptr<HookEditor> editor;
    if (!fns.empty()) editor = std::make_unique<py::PythonHooks>(std::move(fns), std::move(interventions));
    else editor = std::move(interventions);
    opt.editor = editor.get();

    // After every step: the stream callback, and Ctrl-C. While the forward runs without the
    // GIL, Python's SIGINT handler only sets a flag; checking it here ends a long generate()
    // with KeyboardInterrupt at the next step instead of after the last one.
    const pyb::object& stream = o.stream;
    opt.on_step = [&stream](int step, const std::vector<int32_t>& tokens) {
      pyb::gil_scoped_acquire gil;
      if (!stream.is_none()) stream(step, tokens);
      if (PyErr_CheckSignals() != 0) throw pyb::error_already_set();
    };
    HookSet hook_set;
    if (!o.names.empty()) try {
        hook_set = HookSet(o.names, "", cfg.num_layers);
      } catch (const std::runtime_error& e) {
        throw pyb::value_error(e.what());   // a name or glob that names no hook
      }
    py::ArraySink sink(o.keep_steps);
    TracedRun res;
    {
      pyb::gil_scoped_release nogil;   // the forward runs without the GIL; hooks take it back
      // One run at a time per Model: the run context (its encodings, the backend's buffers) is
      // the Model's. A second thread waits here, without the GIL, so that the first one's
      // Python hooks can still take it.
      std::lock_guard<std::mutex> one_run(run_mutex_);
      m_->ctx.encodings = std::move(encodings);
      res = run_traced(m_->ctx, opt, hook_set, o.out, o.keep_steps > 0 ? &sink : nullptr, o.compress);
    }
    pyb::dict d;
    d["new_tokens"] = res.new_tokens;
    std::vector<std::string> reasons;
    for (StopReason r : res.stop_reasons) reasons.push_back(stop_reason_name(r));
    d["stop_reasons"] = reasons;
    d["prompts"] = opt.prompts;
    d["missing_hooks"] = res.missing_hooks;
    d["prefill_seconds"] = res.prefill_seconds;
    d["decode_seconds"] = res.decode_seconds;
    pyb::dict steps;
    for (auto& [step, tensors] : sink.steps()) {
      pyb::dict s;
      for (auto& [name, t] : tensors) s[pyb::str(name)] = to_numpy(std::move(t));
      steps[pyb::int_(step)] = s;
    }
    d["steps"] = steps;
    return d;
  }

  // One prefill with gradients (grad/grad_run.h): m.run_with_grads in python/lmscope/__init__.py.
  // Bad input (a token outside the vocabulary, a position outside a prompt, a NaN metric):
  // std::invalid_argument, which pybind11 raises as ValueError.
  pyb::dict run_grads(const Prompts& prompts, bool add_special,
                      const std::string& metric, const std::string& names, const std::string& padding_side,
                      bool use_cache, const pyb::list& specs) {
    const ModelConfig& cfg = m_->loaded.cfg;
    GradRequest req;
    std::vector<InterventionSpec> parsed;
    for (const pyb::handle s : specs) parsed.push_back(py::spec_from_python(s, cfg));   // invalid_argument: ValueError
    std::unique_ptr<Interventions> interventions;
    if (!parsed.empty()) interventions = std::make_unique<Interventions>(std::move(parsed), cfg);
    req.editor = interventions.get();
    req.prompts = prompt_ids(prompts, add_special, nullptr);
    req.padding_side = parse_padding_side(padding_side);
    req.pad_id = m_->special.pad_id;
    req.use_cache = use_cache;
    req.metric = parse_metric(metric);
    const tok::Tokenizer* tk = m_->tokenizer ? &*m_->tokenizer : nullptr;
    resolve_metric_tokens(req.metric, cfg.vocab_size, tk ? EncodeFn([tk](const std::string& t) {
      return tk->encode(t, false);
    }) : EncodeFn());
    req.hooks = names;
    GradResult r;
    {
      pyb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> one_run(run_mutex_);
      r = run_with_grads(cfg, m_->loaded.weights, *m_->backend, req);
    }
    auto held = [](const Tensor& t) {
      py::HeldTensor h;
      h.shape = t.shape();
      if (t.dtype() == DType::I32) {
        h.ids = true;
        h.i32.assign(t.i32(), t.i32() + t.numel());
      } else {
        h.f32.assign(t.f32(), t.f32() + t.numel());
      }
      return to_numpy(std::move(h));
    };
    pyb::dict d, acts, grads;
    for (const auto& [name, t] : r.activations) acts[pyb::str(name)] = held(t);
    for (const auto& [name, t] : r.grads) grads[pyb::str(name)] = held(t);
    d["logits"] = held(r.logits);
    d["metric"] = r.metric;
    d["activations"] = acts;
    d["grads"] = grads;
    d["prompts"] = req.prompts;
    return d;
  }

  // A patching sweep (experiments/patching.h), as lmscope-patch runs it: lmscope.patch_sweep in
  // python/lmscope/patching.py. `metric` is a spec string (lmscope-patch --metric's grammar) or
  // a Python function of one row's logits [T, V] (float32) returning a number.
  pyb::dict patch_sweep(const Prompts& clean, const Prompts& corrupted, bool add_special,
                        const std::vector<std::string>& sites, const pyb::object& metric, bool activation,
                        bool attribution, int rows_per_forward) {
    const ModelConfig& cfg = m_->loaded.cfg;
    PatchSweepOptions opt;
    opt.clean = prompt_ids(clean, add_special, nullptr).at(0);
    opt.corrupt = prompt_ids(corrupted, add_special, nullptr).at(0);
    opt.sites = sites;
    opt.activation = activation;
    opt.attribution = attribution;
    opt.weights = &m_->loaded.weights;
    opt.rows_per_forward = rows_per_forward;
    const tok::Tokenizer* tk = m_->tokenizer ? &*m_->tokenizer : nullptr;
    try {
      if (pyb::isinstance<pyb::str>(metric)) {
        opt.metric = parse_patch_metric(metric.cast<std::string>(), tk, cfg.vocab_size);
      } else {
        if (!PyCallable_Check(metric.ptr())) throw pyb::value_error("metric: a spec string or a function of the logits");
        opt.metric.text = "python function";
        opt.metric.fn = [metric](const float* logits, int64_t T, int64_t V) {
          pyb::gil_scoped_acquire gil;
          const pyb::array_t<float> rows({T, V}, logits);   // a copy: the function may keep it
          const pyb::object v = metric(rows);
          try {
            return v.cast<double>();
          } catch (const pyb::cast_error&) {
            throw pyb::value_error("metric function returned " + std::string(pyb::repr(v)) + ", not a number");
          }
        };
      }
    } catch (const pyb::error_already_set&) {
      throw;
    } catch (const std::runtime_error& e) {   // a metric that does not parse: one line
      throw pyb::value_error(e.what());
    }
    PatchSweep s;
    {
      pyb::gil_scoped_release nogil;
      std::lock_guard<std::mutex> one_run(run_mutex_);
      try {
        s = run_patch_sweep(m_->ctx, opt);
      } catch (const pyb::error_already_set&) {
        throw;
      } catch (const std::runtime_error& e) {   // bad input: one line
        throw std::invalid_argument(e.what());
      }
    }
    pyb::dict d, grids;
    d["clean_ids"] = s.clean;
    d["corrupt_ids"] = s.corrupt;
    d["clean_metric"] = s.clean_metric;
    d["corrupt_metric"] = s.corrupt_metric;
    d["forwards"] = s.forwards;
    d["cells"] = s.cells;
    d["seconds"] = s.seconds;
    d["attribution_seconds"] = s.attribution_seconds;
    for (const PatchGrid& g : s.grids) {
      pyb::dict gd;
      gd["columns"] = g.columns;
      gd["column_index"] = g.column_index;
      gd["metric"] = g.metric;
      gd["normalized"] = g.normalized;
      gd["attribution"] = g.attribution;
      gd["attribution_normalized"] = g.attribution_normalized;
      gd["attribution_by_position"] = g.attribution_by_position;
      gd["pearson"] = g.pearson;
      grids[pyb::str(g.site)] = gd;
    }
    d["sites"] = grids;
    return d;
  }

  std::vector<std::string> weight_names() const {
    std::vector<std::string> out;
    for (const auto& [name, t] : named_weights(m_->loaded.weights)) out.push_back(name);
    return out;
  }

  // A weight as float32 (F16/BF16 widened, GGUF blocks dequantized), in HF's layout ([out, in]):
  // a copy, so it outlives the model. `rows` (None: all) picks rows of the first axis, numpy's
  // weight[rows]: only those rows are read (Tensor::rows_f32, what the embedding lookup reads
  // a row with), so two rows of Gemma 3's 262,144-row head cost two rows' work, not the
  // whole matrix as float32.
  pyb::array weight(const std::string& name, const pyb::object& rows) const {
    for (const auto& [n, t] : named_weights(m_->loaded.weights)) {
      if (n != name) continue;
      py::HeldTensor held;
      if (rows.is_none()) {
        const Tensor f = t->values_f32();
        held.shape = f.shape();
        held.f32.assign(f.f32(), f.f32() + f.numel());
        return to_numpy(std::move(held));
      }
      const std::vector<int64_t> picked = weight_rows(name, *t, rows);
      const int64_t R = t->dim(0), C = R ? t->numel() / R : 0;
      held.shape = t->shape();
      held.shape[0] = int64_t(picked.size());
      held.f32.resize(picked.size() * size_t(C));
      for (size_t i = 0; i < picked.size(); ++i) t->rows_f32(picked[i], 1, held.f32.data() + i * size_t(C));
      return to_numpy(std::move(held));
    }
    throw pyb::key_error("no weight '" + name + "' (m.weight_names() lists them: model.embed_tokens.weight, "
                         "model.layers.L.self_attn.o_proj.weight, ..., lm_head.weight)");
  }

 private:
  // weight()'s rows: each a Python int (numpy's too) in -R..R-1, a negative one counted from the
  // end; anything else one line, IndexError for a row outside the weight, TypeError for the rest.
  static std::vector<int64_t> weight_rows(const std::string& name, const Tensor& t, const pyb::object& rows) {
    const std::string where = "weight('" + name + "', rows=...): ";
    if (t.ndim() < 1) throw pyb::type_error(where + "the weight is a scalar, it has no rows");
    if (pyb::isinstance<pyb::str>(rows) || !pyb::isinstance<pyb::iterable>(rows))
      throw pyb::type_error(where + "rows is a list of row indices (rows=[3], not rows=" +
                            std::string(pyb::repr(rows)) + ")");
    const int64_t R = t.dim(0);
    std::vector<int64_t> out;
    for (const pyb::handle h : rows) {
      // A bool (numpy's too, whose __index__ numpy deprecates) is not a row: True is not row 1.
      const bool numpy_bool =
          pyb::hasattr(h, "dtype") && pyb::str(h.attr("dtype").attr("kind")).cast<std::string>() == "b";
      if (PyBool_Check(h.ptr()) || numpy_bool || !PyIndex_Check(h.ptr()) || pyb::isinstance<pyb::array>(h))
        throw pyb::type_error(where + "a row is an int, not " + std::string(pyb::repr(h)));
      const pyb::int_ i = pyb::reinterpret_steal<pyb::int_>(PyNumber_Index(h.ptr()));
      if (!i) throw pyb::error_already_set();
      int overflow = 0;
      const long long r = PyLong_AsLongLongAndOverflow(i.ptr(), &overflow);
      if (overflow || r < -R || r >= R)
        throw pyb::index_error(where + "row " + std::string(pyb::str(pyb::handle(i))) + " is outside the weight's " +
                               std::to_string(R) + " rows (" + std::to_string(-R) + ".." + std::to_string(R - 1) + ")");
      out.push_back(r < 0 ? r + R : r);
    }
    return out;
  }

  py::PythonHook python_hook(const std::string& site, const pyb::function& fn) const {
    const auto parsed = parse_hook_name(site);
    if (!parsed || !hook_info(parsed->id).editable)
      throw pyb::value_error("hook site '" + site + "' is not an editable site (" + [&] {
        std::string all;
        for (const std::string& s : intervention_site_names()) all += (all.empty() ? "" : ", ") + s;
        return all;
      }() + ")");
    if (hook_info(parsed->id).per_layer && (parsed->layer < 0 || parsed->layer >= m_->loaded.cfg.num_layers))
      throw pyb::value_error("hook site '" + site + "': layer " + std::to_string(parsed->layer) + " is outside 0.." +
                             std::to_string(m_->loaded.cfg.num_layers - 1));
    return {parsed->id, parsed->layer, fn, site};
  }

  std::unique_ptr<OpenModel> m_;
  std::mutex run_mutex_;
};

}  // namespace

PYBIND11_MODULE(_core, mod) {
  mod.doc() = "lmscope's engine (use the lmscope package, python/lmscope/__init__.py)";
  pyb::class_<RunOptions>(mod, "RunOptions")
      .def(pyb::init<>())
      .def_readwrite("prompts", &RunOptions::prompts)
      .def_readwrite("add_special", &RunOptions::add_special)
      .def_readwrite("names", &RunOptions::names)
      .def_readwrite("keep_steps", &RunOptions::keep_steps)
      .def_readwrite("padding_side", &RunOptions::padding_side)
      .def_readwrite("max_new_tokens", &RunOptions::max_new_tokens)
      .def_readwrite("use_cache", &RunOptions::use_cache)
      .def_readwrite("sampling", &RunOptions::sampling)
      .def_readwrite("eos_ids", &RunOptions::eos_ids)
      .def_readwrite("stop", &RunOptions::stop)
      .def_readwrite("specs", &RunOptions::specs)
      .def_readwrite("hooks", &RunOptions::hooks)
      .def_readwrite("out", &RunOptions::out)
      .def_readwrite("stream", &RunOptions::stream)
      .def_readwrite("compress", &RunOptions::compress);
  pyb::class_<Engine>(mod, "Engine")
      .def(pyb::init<const std::string&, const std::string&, const std::string&, const std::string&, int>())
      .def("info", &Engine::info)
      .def("encode", &Engine::encode)
      .def("decode", &Engine::decode)
      .def("pieces", &Engine::pieces)
      .def("chat", &Engine::chat)
      .def("run", &Engine::run)
      .def("run_grads", &Engine::run_grads)
      .def("patch_sweep", &Engine::patch_sweep)
      .def("weight_names", &Engine::weight_names)
      .def("weight", &Engine::weight, pyb::arg("name"), pyb::arg("rows") = pyb::none());

  // lib/report/attention_view.js, the report's heatmap view, for lmscope.attention_view's cell output.
  mod.def("attention_view_script", [] { return lmscope::attention_view_script(); });

  // The project's one atomic writer (io/text_file.h) for files Python builds in memory (the
  // shards of lmscope.collect): the path holds either all of `content` or what it held before.
  mod.def("write_file_atomic", [](const std::string& path, const pyb::bytes& content) {
    const std::string bytes = content;   // a copy made with the GIL held; the write runs without it
    std::string problem;
    {
      pyb::gil_scoped_release nogil;
      try {
        write_file_atomic(path, bytes);
      } catch (const std::runtime_error& e) {
        problem = e.what();   // one line: "cannot write '<path>': <reason>"
      }
    }
    if (!problem.empty()) {
      PyErr_SetString(PyExc_OSError, problem.c_str());
      throw pyb::error_already_set();
    }
  });
  // One corpus line as a document (tokenizer/corpus.h, the one reader of lmscope.collect and
  // lmscope-score --data): None for a blank line, the text, or the token ids; ValueError
  // (std::invalid_argument) saying what is wrong. vocab_size < 0: ids unchecked.
  mod.def("corpus_document", [](const pyb::bytes& line, const std::string& kind, const std::string& field,
                                int64_t vocab_size) -> pyb::object {
    const std::optional<CorpusDocument> d = corpus_document(std::string_view(line), corpus_kind("", kind), field, vocab_size);
    if (!d) return pyb::none();
    if (kind == "ids") return pyb::cast(d->ids);
    return pyb::str(d->text);
  });
  // The interventions of a run as the tools print them (intervene/record.h), from their record's
  // JSON ("intervened: layers.3.attn_out=zero"): lmscope-sweep score's line, lmscope-score's.
  mod.def("interventions_line", [](const std::string& record_json) { return interventions_line(record_json); });
  // The hooks a Python function or an intervention may edit (HookInfo::editable), in forward
  // order, as docs/hooks.md names them: "embed", "layers.L.resid_pre", ..., "logits".
  mod.def("editable_hooks", [] { return intervention_site_names(); });
  // A hook's axis names as docs/hooks.md gives them ("layers.3.attn.q" -> "B,H,T,hd"), "" for
  // a name that is no hook.
  mod.def("hook_axes", [](const std::string& name) -> std::string {
    const auto parsed = parse_hook_name(name);
    return parsed ? hook_info(parsed->id).axes : "";
  });
}
