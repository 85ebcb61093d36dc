#include "generate/score_corpus.h"

#include <cmath>
#include <stdexcept>

namespace lmscope {

CorpusScore score_corpus(Decoder& decoder, const std::vector<std::vector<int32_t>>& docs, const std::vector<int64_t>& doc_ids,
                         int32_t pad_id, int batch, HookEditor* editor, const CorpusProgressFn& progress) {
  if (batch < 1) throw std::runtime_error("--batch must be at least 1");
  if (docs.size() != doc_ids.size()) throw std::logic_error("score_corpus: one id per document");
  CorpusScore out;
  out.edited = editor != nullptr;
  double nll = 0, nll_edited = 0;
  for (size_t first = 0; first < docs.size(); first += size_t(batch)) {
    const size_t n = std::min(docs.size() - first, size_t(batch));
    const std::vector<std::vector<int32_t>> rows(docs.begin() + long(first), docs.begin() + long(first + n));
    const ScoreResult clean = score_rows(decoder, rows, pad_id);
    ScoreResult edited;
    if (editor) edited = score_rows(decoder, rows, pad_id, editor);
    for (size_t r = 0; r < n; ++r) {
      DocumentScore d;
      d.doc = doc_ids[first + r];
      d.predicted = int64_t(clean.rows[r].tokens.size());
      d.nll_sum = clean.rows[r].nll_sum;
      if (editor) d.nll_sum_edited = edited.rows[r].nll_sum;
      // Summed in the corpus's order, in double: the same sum a reader makes from the
      // per-document numbers.
      nll += d.nll_sum;
      nll_edited += d.nll_sum_edited;
      out.predicted += d.predicted;
      out.docs.push_back(d);
    }
    if (progress) progress(int64_t(first + n), out.predicted);
  }
  out.loss = nll / double(out.predicted);
  out.perplexity = std::exp(out.loss);
  if (editor) {
    out.loss_edited = nll_edited / double(out.predicted);
    out.perplexity_edited = std::exp(out.loss_edited);
  }
  return out;
}

}  // namespace lmscope
