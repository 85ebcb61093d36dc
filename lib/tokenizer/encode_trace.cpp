#include "tokenizer/encode_trace.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "tokenizer/tokenizer.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

namespace lmscope {

const char* kind_name(WordTrace::Kind k) {
  switch (k) {
    case WordTrace::Kind::Bpe: return "bpe";
    case WordTrace::Kind::Added: return "added";
    case WordTrace::Kind::Post: return "post";
  }
  return "?";
}

std::string trace_to_json(const tok::Tokenizer& t, const EncodeTrace& trace, int indent) {
  using nlohmann::json;
  auto shown = [&t](const std::vector<int32_t>& ids) {
    json a = json::array();
    for (int32_t id : ids) a.push_back(t.token_display(id));
    return a;
  };
  auto vocab_strings = [&t](const std::vector<int32_t>& ids) {
    json a = json::array();
    for (int32_t id : ids) a.push_back(t.token_text(id));
    return a;
  };
  json j;
  j["text"] = trace.text;
  j["ids"] = trace.ids;
  j["tokens"] = vocab_strings(trace.ids);   // as HF Encoding.tokens ("Ġworld")
  j["pieces"] = shown(trace.ids);           // the bytes each id stands for (" world")
  json words = json::array();
  for (const WordTrace& w : trace.words) {
    json jw;
    jw["text"] = w.text;
    jw["kind"] = kind_name(w.kind);
    jw["symbols"] = shown(w.symbols);
    jw["symbol_ids"] = w.symbols;
    json merges = json::array();
    for (const MergeStep& m : w.merges) {
      merges.push_back({{"left", t.token_display(m.left)},
                        {"right", t.token_display(m.right)},
                        {"merged", t.token_display(m.merged)},
                        {"rank", m.rank},
                        {"position", m.position},
                        {"left_id", m.left},
                        {"right_id", m.right},
                        {"merged_id", m.merged}});
      if (trace.by_score) merges.back()["score"] = m.score;
    }
    jw["merges"] = std::move(merges);
    jw["ids"] = w.ids;
    jw["pieces"] = shown(w.ids);
    if (w.whole_word) jw["whole_word"] = true;
    if (trace.by_score) jw["byte_fallback"] = w.byte_fallback;
    words.push_back(std::move(jw));
  }
  j["words"] = std::move(words);
  if (trace.by_score) j["by_score"] = true;
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

void write_tokenizer_trace(TraceWriter& w, int row, const EncodeTrace& trace, const tok::Tokenizer& t) {
  const std::string g = "tokenizer/row_" + std::to_string(row) + "/";
  auto n = [](size_t k) { return Shape{int64_t(k)}; };

  std::vector<std::string> words, kinds, pieces;
  std::vector<int32_t> word_ids{0}, symbols, word_symbols{0};
  std::vector<int32_t> m_word, m_step, m_left, m_right, m_merged, m_rank, m_pos;
  std::vector<std::string> m_left_text, m_right_text, m_merged_text;
  std::vector<float> m_score;
  std::vector<int32_t> fallback_word;
  std::vector<std::string> fallback_text;
  for (size_t wi = 0; wi < trace.words.size(); ++wi) {
    const WordTrace& wt = trace.words[wi];
    words.push_back(wt.text);
    kinds.push_back(kind_name(wt.kind));
    word_ids.push_back(word_ids.back() + int32_t(wt.ids.size()));
    symbols.insert(symbols.end(), wt.symbols.begin(), wt.symbols.end());
    word_symbols.push_back(int32_t(symbols.size()));
    for (size_t s = 0; s < wt.merges.size(); ++s) {
      const MergeStep& m = wt.merges[s];
      m_word.push_back(int32_t(wi));
      m_step.push_back(int32_t(s));
      m_left.push_back(m.left);
      m_right.push_back(m.right);
      m_merged.push_back(m.merged);
      m_rank.push_back(m.rank);
      m_pos.push_back(m.position);
      m_left_text.push_back(t.token_display(m.left));
      m_right_text.push_back(t.token_display(m.right));
      m_merged_text.push_back(t.token_display(m.merged));
      m_score.push_back(m.score);
    }
    for (const std::string& c : wt.byte_fallback) {
      fallback_word.push_back(int32_t(wi));
      fallback_text.push_back(c);
    }
  }
  for (int32_t id : trace.ids) pieces.push_back(t.token_display(id));

  w.write_root_strings(g + "text", {}, {trace.text});
  w.write_root_dataset(g + "ids", n(trace.ids.size()), trace.ids.data());
  w.write_root_strings(g + "pieces", n(pieces.size()), pieces);
  w.write_root_strings(g + "words", n(words.size()), words);
  w.write_root_strings(g + "word_kind", n(kinds.size()), kinds);
  w.write_root_dataset(g + "word_ids_offset", n(word_ids.size()), word_ids.data());
  w.write_root_dataset(g + "symbols", n(symbols.size()), symbols.data());
  w.write_root_dataset(g + "word_symbols_offset", n(word_symbols.size()), word_symbols.data());
  w.write_root_dataset(g + "merges/word", n(m_word.size()), m_word.data());
  w.write_root_dataset(g + "merges/step", n(m_step.size()), m_step.data());
  w.write_root_dataset(g + "merges/left", n(m_left.size()), m_left.data());
  w.write_root_dataset(g + "merges/right", n(m_right.size()), m_right.data());
  w.write_root_dataset(g + "merges/merged", n(m_merged.size()), m_merged.data());
  w.write_root_dataset(g + "merges/rank", n(m_rank.size()), m_rank.data());
  w.write_root_dataset(g + "merges/position", n(m_pos.size()), m_pos.data());
  w.write_root_strings(g + "merges/left_text", n(m_left_text.size()), m_left_text);
  w.write_root_strings(g + "merges/right_text", n(m_right_text.size()), m_right_text);
  w.write_root_strings(g + "merges/merged_text", n(m_merged_text.size()), m_merged_text);
  if (trace.by_score) {   // SentencePiece: what chose each merge, and the characters spelled by bytes
    w.write_root_dataset(g + "merges/score", n(m_score.size()), m_score.data());
    w.write_root_dataset(g + "byte_fallback/word", n(fallback_word.size()), fallback_word.data());
    w.write_root_strings(g + "byte_fallback/text", n(fallback_text.size()), fallback_text);
  }
}

bool read_tokenizer_trace(const TraceReader& r, int row, EncodeTrace& out) {
  const std::string g = "tokenizer/row_" + std::to_string(row) + "/";
  if (!r.has_dataset(g + "ids")) return false;
  auto ints = [&](const std::string& name) { return r.read_ints(g + name); };
  auto bad = [&](const std::string& name) {
    return std::runtime_error("'" + r.path() + "': /" + g + name + " does not match the group's other arrays");
  };
  out.clear();
  std::vector<std::string> text = r.read_strings(g + "text");
  out.text = text.empty() ? "" : text[0];
  out.ids = ints("ids");
  const std::vector<std::string> words = r.read_strings(g + "words"), kinds = r.read_strings(g + "word_kind");
  const std::vector<int32_t> woff = ints("word_ids_offset"), symbols = ints("symbols"), soff = ints("word_symbols_offset");
  if (kinds.size() != words.size() || woff.size() != words.size() + 1) throw bad("word_ids_offset");
  if (soff.size() != words.size() + 1) throw bad("word_symbols_offset");
  for (size_t w = 0; w < words.size(); ++w) {
    if (woff[w] < 0 || woff[w] > woff[w + 1] || size_t(woff[w + 1]) > out.ids.size()) throw bad("word_ids_offset");
    if (soff[w] < 0 || soff[w] > soff[w + 1] || size_t(soff[w + 1]) > symbols.size()) throw bad("word_symbols_offset");
    WordTrace wt;
    wt.text = words[w];
    wt.kind = kinds[w] == "added" ? WordTrace::Kind::Added : kinds[w] == "post" ? WordTrace::Kind::Post : WordTrace::Kind::Bpe;
    wt.ids.assign(out.ids.begin() + woff[w], out.ids.begin() + woff[w + 1]);
    wt.symbols.assign(symbols.begin() + soff[w], symbols.begin() + soff[w + 1]);
    out.words.push_back(std::move(wt));
  }
  if (r.has_dataset(g + "merges/word")) {
    const std::vector<int32_t> mw = ints("merges/word"), left = ints("merges/left"), right = ints("merges/right"),
                               merged = ints("merges/merged"), rank = ints("merges/rank"), pos = ints("merges/position");
    for (size_t m = 0; m < mw.size(); ++m) {
      if (mw[m] < 0 || size_t(mw[m]) >= out.words.size()) throw bad("merges/word");
      if (m >= left.size() || m >= right.size() || m >= merged.size() || m >= rank.size() || m >= pos.size()) throw bad("merges/*");
      out.words[size_t(mw[m])].merges.push_back(MergeStep{left[m], right[m], merged[m], rank[m], pos[m]});
    }
  }
  if (r.has_dataset(g + "merges/score")) {
    out.by_score = true;
    const std::vector<double> score = r.read_dataset(g + "merges/score").values;
    size_t m = 0;
    for (WordTrace& wt : out.words)
      for (MergeStep& ms : wt.merges) {
        if (m >= score.size()) throw bad("merges/score");
        ms.score = float(score[m++]);
      }
    const std::vector<int32_t> fw = ints("byte_fallback/word");
    const std::vector<std::string> ft = r.read_strings(g + "byte_fallback/text");
    if (ft.size() != fw.size()) throw bad("byte_fallback/text");
    for (size_t i = 0; i < fw.size(); ++i) {
      if (fw[i] < 0 || size_t(fw[i]) >= out.words.size()) throw bad("byte_fallback/word");
      out.words[size_t(fw[i])].byte_fallback.push_back(ft[i]);
    }
  }
  for (WordTrace& wt : out.words)
    wt.whole_word = wt.kind == WordTrace::Kind::Bpe && wt.merges.empty() && wt.symbols.size() > wt.ids.size();
  return true;
}

}  // namespace lmscope
