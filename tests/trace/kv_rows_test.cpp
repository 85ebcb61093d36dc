// kv.L.k / kv.L.v stored as each step's appended rows (trace/kv_rows.h): the reader rebuilds
// the whole cache. The reference is a Hugging Face golden that stores the whole cache at every
// step (format_version 1): its rows, rewritten the new way, must read back as its caches.
#include <gtest/gtest.h>
#include <hdf5.h>

#include <filesystem>

#include "io/hdf5.h"
#include "tests/golden_manifest.h"
#include "tests/test_util.h"
#include "trace/kv_rows.h"
#include "trace/trace_reader.h"
#include "trace/trace_writer.h"

using namespace lmscope;
namespace fs = std::filesystem;

namespace {

const std::string kGolden = golden::root() + "/golden/traces/tiny-qwen2-b.h5";   // B=3, 3 layers, 4 steps

std::string scratch(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("lmscope-kvrows-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return (dir / name).string();
}

// The golden's kv hooks rewritten as appended rows: step n stores positions S-T..S-1.
void write_appended_from(const TraceReader& ref, const std::string& out) {
  TraceWriter w(out);
  for (int step = 0; step < ref.n_steps(); ++step) {
    StepInfo si = ref.step_info(step);
    w.begin_step(si);
    for (const std::string& hook : ref.hooks(step)) {
      if (hook.rfind("kv.", 0) != 0) continue;
      HookData d = ref.read(step, hook);
      ASSERT_EQ(d.shape.size(), 4u);
      ASSERT_EQ(d.shape[2], si.S) << hook;
      Tensor cache = Tensor::zeros(d.shape);
      for (size_t i = 0; i < d.values.size(); ++i) cache.f32()[i] = float(d.values[i]);
      Tensor rows = appended_kv_rows(cache, si.T);
      w.write_kv_rows(hook, rows.shape(), rows.f32(), si.S - si.T);
    }
  }
  w.commit();
}

}  // namespace

TEST(KvRows, AppendedRowsReadBackAsTheHuggingFaceCaches) {
  TraceReader ref(kGolden);
  ASSERT_GE(ref.n_steps(), 3);
  const std::string out = scratch("appended.h5");
  write_appended_from(ref, out);

  TraceReader ours(out);
  EXPECT_EQ(ours.root_attr_int("format_version"), kTraceFormatVersion);
  int compared = 0;
  for (int step = 0; step < ref.n_steps(); ++step) {
    const StepInfo si = ref.step_info(step);
    for (const std::string& hook : ours.hooks(step)) {
      // the file holds this step's T rows only ...
      h5::File f = h5::File::open_read(out);
      std::string path = step_group_name(step) + "/" + hook;
      for (char& c : path) c = c == '.' ? '/' : c;
      h5::Dataset ds = f.root().open_dataset(path);
      EXPECT_EQ(ds.read().shape[2], si.T) << hook;
      EXPECT_EQ(ds.attr_string("axes"), "B,Hkv,T,hd");
      // ... and reads back as the whole cache, bit for bit
      HookData a = ours.read(step, hook), r = ref.read(step, hook);
      EXPECT_EQ(a.shape, r.shape) << hook << " step " << step;
      EXPECT_EQ(a.values, r.values) << hook << " step " << step;
      EXPECT_EQ(a.axes, (std::vector<std::string>{"B", "Hkv", "S", "hd"}));
      ++compared;
    }
  }
  EXPECT_EQ(compared, ref.n_steps() * 6);   // 3 layers x k, v
  // out of order: an earlier step after a later one rebuilds from step 0
  EXPECT_EQ(ours.read(1, "kv.2.v").values, ref.read(1, "kv.2.v").values);
  EXPECT_EQ(ours.read(0, "kv.2.v").values, ref.read(0, "kv.2.v").values);
}

// A later write to a position replaces the earlier one, as in the cache (lmscope-cache
// --fault append rewrites one position at every decode step).
TEST(KvRows, AssemblyWritesRowsAtTheirPositionsInOrder) {
  KvAssembly a;
  a.add({1, 1, 3, 2}, {0, 0, 1, 1, 2, 2}, 0, "t");
  a.add({1, 1, 1, 2}, {3, 3}, 3, "t");
  EXPECT_EQ(a.cache(4, "t"), (std::vector<double>{0, 0, 1, 1, 2, 2, 3, 3}));
  a.add({1, 1, 1, 2}, {9, 9}, 3, "t");   // position 3 written again
  EXPECT_EQ(a.cache(4, "t"), (std::vector<double>{0, 0, 1, 1, 2, 2, 9, 9}));
  EXPECT_EQ(a.cache(2, "t"), (std::vector<double>{0, 0, 1, 1}));
  // two heads: rows go to each head's own positions
  KvAssembly h;
  h.add({1, 2, 1, 1}, {10, 20}, 0, "t");
  h.add({1, 2, 1, 1}, {11, 21}, 1, "t");
  EXPECT_EQ(h.cache(2, "t"), (std::vector<double>{10, 11, 20, 21}));
}

TEST(KvRows, AssemblyRefusesGapsAndShapeChangesInOneLine) {
  KvAssembly a;
  a.add({1, 1, 2, 2}, {0, 0, 1, 1}, 0, "'f' step_0000 kv.0.k");
  // a first_position past the filled positions would leave a gap (and could ask for 2^40 rows)
  try {
    a.add({1, 1, 1, 2}, {3, 3}, int64_t(1) << 40, "'f' step_0001 kv.0.k");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "'f' step_0001 kv.0.k: first_position 1099511627776 is not within the 2 cache positions of the earlier steps");
  }
  EXPECT_THROW(a.add({1, 2, 1, 1}, {3, 3}, 2, "t"), std::runtime_error);   // Hkv changed
  EXPECT_THROW(a.add({1, 1, 2}, {3, 3}, 2, "t"), std::runtime_error);      // not 4-d
  EXPECT_THROW(a.cache(3, "t"), std::runtime_error);                       // more than filled
}

TEST(KvRows, ReaderRefusesAMissingStepAndANewerFormat) {
  TraceReader ref(kGolden);
  const std::string out = scratch("gap.h5");
  {
    TraceWriter w(out);
    for (int step = 0; step < 3; ++step) {
      StepInfo si = ref.step_info(step);
      w.begin_step(si);
      if (step == 1) continue;   // step 1's rows are missing
      HookData d = ref.read(step, "kv.0.k");
      Tensor cache = Tensor::zeros(d.shape);
      for (size_t i = 0; i < d.values.size(); ++i) cache.f32()[i] = float(d.values[i]);
      Tensor rows = appended_kv_rows(cache, si.T);
      w.write_kv_rows("kv.0.k", rows.shape(), rows.f32(), si.S - si.T);
    }
    w.commit();
  }
  {
    TraceReader r(out);
    EXPECT_EQ(r.read(0, "kv.0.k").values, ref.read(0, "kv.0.k").values);
    try {
      r.read(2, "kv.0.k");
      FAIL() << "no error";
    } catch (const std::runtime_error& e) {
      EXPECT_EQ(std::string(e.what()), "'" + out +
                                           "' step_0001 kv.0.k: missing, so the cache of step_0002 cannot be rebuilt "
                                           "(each step stores only the rows it appended)");
    }
  }
  {   // a newer writer's file
    hid_t f = H5Fopen(out.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    ASSERT_GE(f, 0);
    hid_t a = H5Aopen(f, "format_version", H5P_DEFAULT);
    int64_t v = kTraceFormatVersion + 1;
    ASSERT_GE(H5Awrite(a, H5T_NATIVE_INT64, &v), 0);
    H5Aclose(a);
    H5Fclose(f);
  }
  try {
    TraceReader newer(out);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "'" + out + "' has a format_version this lmscope does not read (it reads 1..2)");
  }
}
