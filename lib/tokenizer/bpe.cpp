#include "tokenizer/bpe.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace lmscope::tok {

// Unused ids a vocabulary may leave below its largest id (bpe.cpp: from_json).
constexpr int64_t kMaxVocabHoles = 1 << 20;

// ---- PairMap ----------------------------------------------------------------------------

void PairMap::reserve(size_t n) {
  size_t cap = 16;
  while (cap < n * 2) cap <<= 1;   // load factor <= 1/2
  std::vector<Entry> old = std::move(slots_);
  slots_.assign(cap, Entry{});
  mask_ = cap - 1;
  count_ = 0;
  for (const Entry& e : old)
    if (e.key != kEmpty) set(int32_t(e.key >> 32), int32_t(uint32_t(e.key)), e.rank, e.merged);
}

void PairMap::set(int32_t a, int32_t b, int32_t rank, int32_t merged) {
  if ((count_ + 1) * 2 > slots_.size()) reserve(count_ + 1 > 8 ? (count_ + 1) * 2 : 16);
  uint64_t key = pack(a, b);
  for (size_t i = hash(key) & mask_;; i = (i + 1) & mask_) {
    Entry& e = slots_[i];
    if (e.key == key || e.key == kEmpty) {
      if (e.key == kEmpty) ++count_;
      e = Entry{key, rank, merged};
      return;
    }
  }
}

// ---- the word cache (HF caches per pre-token string too) --------------------------------

// Open addressing over two arenas (the words' bytes, their ids): one probe usually costs one
// cache line, where a node-based map costs three pointer hops.
struct Bpe::Cache {
  static constexpr size_t kCapacity = 1 << 16;   // words; when full, new words are not cached
  static constexpr size_t kMaxWordBytes = 256;    // HF's MAX_LENGTH
  struct Slot {
    uint32_t hash = 0;      // 0 = empty
    uint32_t word_off = 0;
    uint32_t ids_off = 0;
    uint8_t word_len = 0;
    uint8_t ids_len = 0;
  };
  std::mutex mu;
  std::vector<Slot> slots = std::vector<Slot>(kCapacity * 2);
  std::string words;
  std::vector<int32_t> ids;
  size_t count = 0;

  static uint32_t hash_of(std::string_view w) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ w.size();
    size_t i = 0;
    for (; i + 8 <= w.size(); i += 8) {
      uint64_t k;
      std::memcpy(&k, w.data() + i, 8);
      h = (h ^ k) * 0xff51afd7ed558ccdull;
      h ^= h >> 32;
    }
    uint64_t k = 0;
    std::memcpy(&k, w.data() + i, w.size() - i);
    h = (h ^ k) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return uint32_t(h) | 1u;
  }
  // The slot holding `w`, or the empty slot where it would go.
  Slot& probe(std::string_view w, uint32_t h) {
    const size_t mask = slots.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& s = slots[i];
      if (s.hash == 0) return s;
      if (s.hash == h && s.word_len == w.size() && std::memcmp(words.data() + s.word_off, w.data(), w.size()) == 0)
        return s;
    }
  }
  void clear() {
    std::fill(slots.begin(), slots.end(), Slot{});
    words.clear();
    ids.clear();
    count = 0;
  }
};

void Bpe::clear_cache() const {
  std::lock_guard<std::mutex> lock(cache_->mu);
  cache_->clear();
}

// ---- loading ----------------------------------------------------------------------------

Bpe Bpe::from_json(const Field& model) {
  model.expect_object();
  Field type = model.at("type");
  if (type.str() != "BPE") type.fail("unsupported model '" + type.str() + "' (only BPE is supported)");
  if (model.bool_or("byte_fallback", false))
    model.at("byte_fallback").fail("byte_fallback is not supported (byte-level BPE needs no fallback)");
  if (auto d = model.get("dropout"); d && d->number() != 0.0)
    d->fail("dropout is not supported (it makes encoding random)");
  if (model.str_or("continuing_subword_prefix", "") != "")
    model.at("continuing_subword_prefix").fail("a continuing subword prefix is not supported");
  if (model.str_or("end_of_word_suffix", "") != "")
    model.at("end_of_word_suffix").fail("an end-of-word suffix is not supported");

  Bpe bpe;
  bpe.cache_ = std::make_shared<Cache>();
  bpe.fuse_unk_ = model.bool_or("fuse_unk", false);
  bpe.ignore_merges_ = model.bool_or("ignore_merges", false);

  Field vocab = model.at("vocab");
  vocab.expect_object();
  bpe.vocab_.reserve(vocab.size());
  int64_t max_id = -1;
  for (auto it = vocab.json().begin(); it != vocab.json().end(); ++it) {
    Field idf(it.value(), vocab.file(), vocab.path() + "[\"" + it.key() + "\"]");
    int64_t id = idf.integer();
    if (id < 0 || id > INT32_MAX / 2) idf.fail("token id " + std::to_string(id) + " out of range");
    bpe.vocab_.emplace(it.key(), int32_t(id));
    max_id = std::max(max_id, id);
  }
  // Ids index a table: one far past the entries (a hostile 2^28) would make it gigabytes.
  // HF's files number the vocabulary 0..n-1; a few holes are allowed.
  if (max_id >= int64_t(vocab.size()) + kMaxVocabHoles)
    vocab.fail("token id " + std::to_string(max_id) + " leaves more than " + std::to_string(kMaxVocabHoles) +
               " ids unused (the vocabulary has " + std::to_string(vocab.size()) + " entries)");
  bpe.tokens_.assign(size_t(max_id + 1), std::string());
  bpe.has_token_.assign(size_t(max_id + 1), 0);
  for (const auto& [tok, id] : bpe.vocab_) {
    if (bpe.has_token_[size_t(id)])
      vocab.fail("id " + std::to_string(id) + " is given to two tokens ('" + bpe.tokens_[size_t(id)] + "' and '" + tok + "')");
    bpe.tokens_[size_t(id)] = tok;
    bpe.has_token_[size_t(id)] = 1;
  }
  for (int b = 0; b < 256; ++b) {
    auto it = bpe.vocab_.find(byte_level::text_of(uint8_t(b)));
    bpe.byte_ids_[size_t(b)] = it == bpe.vocab_.end() ? -1 : it->second;
  }

  if (auto unk = model.get("unk_token")) {
    std::string u = unk->str();
    auto it = bpe.vocab_.find(u);
    if (it == bpe.vocab_.end()) unk->fail("unk_token '" + u + "' is not in the vocabulary");
    bpe.unk_id_ = it->second;
  }

  Field merges = model.at("merges");
  merges.expect_array();
  bpe.merges_.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) {
    Field m = merges.at(i);
    std::string a, b;
    if (m.json().is_string()) {
      // "a b": exactly one space (HF splits on ' ' and wants two parts)
      std::string s = m.str();
      size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        m.fail("'" + s + "' is not a merge of the form \"left right\"");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (m.json().is_array()) {
      if (m.size() != 2) m.fail("a merge pair must have 2 elements, got " + std::to_string(m.size()));
      a = m.at(0).str();
      b = m.at(1).str();
    } else {
      m.fail("expected \"left right\" or [left, right], got " + std::string(m.json().type_name()));
    }
    auto ia = bpe.vocab_.find(a), ib = bpe.vocab_.find(b), iab = bpe.vocab_.find(a + b);
    if (ia == bpe.vocab_.end()) m.fail("token '" + a + "' is not in the vocabulary");
    if (ib == bpe.vocab_.end()) m.fail("token '" + b + "' is not in the vocabulary");
    if (iab == bpe.vocab_.end()) m.fail("merged token '" + a + b + "' is not in the vocabulary");
    bpe.merges_.set(ia->second, ib->second, int32_t(i), iab->second);
  }
  return bpe;
}

std::optional<int32_t> Bpe::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* Bpe::id_to_token(int32_t id) const {
  if (id < 0 || size_t(id) >= tokens_.size() || !has_token_[size_t(id)]) return nullptr;
  return &tokens_[size_t(id)];
}

// ---- encoding ---------------------------------------------------------------------------

// HF `merge_word`: one symbol per character (per byte when byte-level). A character the
// vocab lacks becomes unk_token (fused runs if fuse_unk), or is dropped when there is no
// unk_token, as HF does.
void Bpe::initial_symbols(std::string_view word, bool byte_level, std::vector<int32_t>& syms) const {
  bool pending_unk = false;
  auto flush_unk = [&] {
    if (pending_unk) syms.push_back(*unk_id_);
    pending_unk = false;
  };
  auto unknown = [&] {
    if (!unk_id_) return;
    if (pending_unk && !fuse_unk_) syms.push_back(*unk_id_);
    pending_unk = true;
  };
  if (byte_level) {
    for (unsigned char c : word) {
      int32_t id = byte_ids_[c];
      if (id < 0) {
        unknown();
        continue;
      }
      flush_unk();
      syms.push_back(id);
    }
  } else {
    size_t i = 0;
    while (i < word.size()) {
      size_t start = i;
      utf8::next(word, i);
      auto it = vocab_.find(word.substr(start, i - start));
      if (it == vocab_.end()) {
        unknown();
        continue;
      }
      flush_unk();
      syms.push_back(it->second);
    }
  }
  flush_unk();
}

namespace {

struct Sym {
  int32_t id;
  int32_t prev;
  int32_t next;
  bool live;
};

struct QItem {
  int32_t rank;
  int32_t pos;
  int32_t merged;
};

// std heaps keep the "largest" on top: make that the lowest rank, then the
// leftmost position (HF's `impl Ord for Merge`).
struct QLess {
  bool operator()(const QItem& a, const QItem& b) const {
    return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
  }
};

thread_local uint64_t position_steps = 0;

// The live symbols of a traced merge as a Fenwick tree over their 0/1 flags: a merge's
// position (the live symbols left of it) and the removal of the right symbol cost O(log n)
// each, where counting the live flags costs O(n) a merge and O(n^2) a word (a run of 100k
// spaces is one word of 100k symbols). Every step is counted (trace_position_steps()).
class LiveSymbols {
 public:
  void reset(int32_t n) {
    n_ = n;
    tree_.assign(size_t(n) + 1, 1);   // the O(n) build: each node adds itself to its parent
    for (int32_t i = 1; i <= n; ++i)
      if (int32_t p = i + (i & -i); p <= n) tree_[size_t(p)] += tree_[size_t(i)];
    tree_[0] = 0;
  }
  // The live symbols in [0, i).
  int32_t before(int32_t i) const {
    int32_t s = 0;
    for (; i > 0; i -= i & -i) s += tree_[size_t(i)], ++position_steps;
    return s;
  }
  void remove(int32_t i) {
    for (++i; i <= n_; i += i & -i) --tree_[size_t(i)], ++position_steps;
  }

 private:
  int32_t n_ = 0;
  std::vector<int32_t> tree_;
};

}  // namespace

uint64_t Bpe::trace_position_steps() { return position_steps; }

void Bpe::merge(std::vector<int32_t>& ids, WordTrace* trace) const {
  const int32_t n = int32_t(ids.size());
  if (n < 2) return;
  thread_local LiveSymbols live;
  if (trace) live.reset(n);
  thread_local std::vector<Sym> syms;
  thread_local std::vector<QItem> heap;   // a binary heap under QLess (min rank, then leftmost)
  syms.resize(size_t(n));
  for (int32_t i = 0; i < n; ++i) syms[size_t(i)] = Sym{ids[size_t(i)], i - 1, i + 1 < n ? i + 1 : -1, true};
  heap.clear();
  auto push = [&](QItem q) {
    heap.push_back(q);
    std::push_heap(heap.begin(), heap.end(), QLess{});
  };
  for (int32_t i = 0; i + 1 < n; ++i)
    if (const PairMap::Entry* e = merges_.find(ids[size_t(i)], ids[size_t(i + 1)]))
      heap.push_back(QItem{e->rank, i, e->merged});
  std::make_heap(heap.begin(), heap.end(), QLess{});

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), QLess{});
    const QItem top = heap.back();
    heap.pop_back();
    Sym& cur = syms[size_t(top.pos)];
    if (!cur.live || cur.next < 0) continue;   // consumed, or now the last symbol
    const int32_t next_pos = cur.next;
    const Sym right = syms[size_t(next_pos)];
    // A stale entry: the pair at this position changed since it was queued.
    const PairMap::Entry* e = merges_.find(cur.id, right.id);
    if (!e || e->merged != top.merged) continue;

    if (trace) {   // the position: the left symbol's index among the symbols still there
      trace->merges.push_back(MergeStep{cur.id, right.id, top.merged, e->rank, live.before(top.pos)});
      live.remove(next_pos);
    }
    cur.id = top.merged;
    cur.next = right.next;
    syms[size_t(next_pos)].live = false;
    if (right.next >= 0) syms[size_t(right.next)].prev = top.pos;
    if (cur.prev >= 0)
      if (const PairMap::Entry* pe = merges_.find(syms[size_t(cur.prev)].id, cur.id))
        push(QItem{pe->rank, cur.prev, pe->merged});
    if (cur.next >= 0)
      if (const PairMap::Entry* ne = merges_.find(cur.id, syms[size_t(cur.next)].id))
        push(QItem{ne->rank, top.pos, ne->merged});
  }
  ids.clear();
  for (int32_t i = 0; i < n; ++i)
    if (syms[size_t(i)].live) ids.push_back(syms[size_t(i)].id);
}

void Bpe::encode_word(std::string_view word, bool byte_level, std::vector<int32_t>& out, WordTrace* trace) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    // HF `tokenize_with_cache`: a word that is itself in the vocab is one token, no merges.
    auto it = byte_level ? vocab_.find(byte_level::encode(word)) : vocab_.find(word);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      if (trace) {
        trace->symbols.clear();
        initial_symbols(word, byte_level, trace->symbols);
        trace->ids = {it->second};
        trace->whole_word = true;
      }
      return;
    }
  }
  const bool cacheable = !trace && word.size() < Cache::kMaxWordBytes;
  uint32_t h = 0;
  if (cacheable) {
    h = Cache::hash_of(word);
    std::lock_guard<std::mutex> lock(cache_->mu);
    const Cache::Slot& s = cache_->probe(word, h);
    if (s.hash != 0) {
      const int32_t* p = cache_->ids.data() + s.ids_off;
      out.insert(out.end(), p, p + s.ids_len);
      return;
    }
  }
  thread_local std::vector<int32_t> ids;
  ids.clear();
  initial_symbols(word, byte_level, ids);
  if (trace) trace->symbols = ids;
  merge(ids, trace);
  if (trace) trace->ids = ids;
  out.insert(out.end(), ids.begin(), ids.end());
  if (cacheable && ids.size() < 256) {
    std::lock_guard<std::mutex> lock(cache_->mu);
    Cache& c = *cache_;
    if (c.count >= Cache::kCapacity) return;
    Cache::Slot& s = c.probe(word, h);
    if (s.hash != 0) return;   // another thread cached it meanwhile
    s = Cache::Slot{h, uint32_t(c.words.size()), uint32_t(c.ids.size()), uint8_t(word.size()), uint8_t(ids.size())};
    c.words.append(word);
    c.ids.insert(c.ids.end(), ids.begin(), ids.end());
    ++c.count;
  }
}

}  // namespace lmscope::tok
