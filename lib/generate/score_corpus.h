// A corpus's loss (lmscope-score --data, docs/score.md "Over a corpus"): every document scored
// as lmscope-score scores a --text, documents batched (right-padded, padding never counted), and
// the corpus loss is the token-weighted mean NLL over every predicted token of every document:
//
//   loss = sum over documents of nll_sum / sum over documents of (tokens - 1)
//
// which is score_rows' loss as if the whole corpus were one batch. With an editor (--intervene)
// every batch runs twice, clean and edited: the ablation's effect over the corpus.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "generate/score.h"

namespace lmscope {

struct DocumentScore {
  int64_t doc = 0;              // the corpus's document id (its line index)
  int64_t predicted = 0;        // tokens - 1
  double nll_sum = 0;
  double nll_sum_edited = 0;    // with the editor (when there is one)
};

struct CorpusScore {
  std::vector<DocumentScore> docs;
  int64_t predicted = 0;
  double loss = 0, perplexity = 0;
  bool edited = false;
  double loss_edited = 0, perplexity_edited = 0;
};

// Progress after each batch: documents and predicted tokens done so far.
using CorpusProgressFn = std::function<void(int64_t docs_done, int64_t predicted_done)>;

// docs[i] holds at least two tokens (score_rows' rule) and doc_ids[i] its id. Runs `batch`
// documents per forward in the corpus's order.
CorpusScore score_corpus(Decoder& decoder, const std::vector<std::vector<int32_t>>& docs, const std::vector<int64_t>& doc_ids,
                         int32_t pad_id, int batch, HookEditor* editor = nullptr, const CorpusProgressFn& progress = nullptr);

}  // namespace lmscope
