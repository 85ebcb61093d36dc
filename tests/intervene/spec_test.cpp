// The intervention grammar (intervene/spec.h): every op and selector parses to what it says,
// the canonical text parses back to the same spec, and each malformed spec is one line naming
// what is wrong.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "intervene/spec.h"
#include "tests/test_util.h"

using namespace lmscope;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_intervention(text);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(InterventionSpec, ParsesEveryOp) {
  InterventionSpec z = parse_intervention("layers.3.attn.z[head=2]=zero");
  EXPECT_EQ(z.hook, Hook::AttnZ);
  EXPECT_TRUE(z.layers.contains(3, 30));
  EXPECT_FALSE(z.layers.contains(2, 30));
  EXPECT_TRUE(z.head.contains(2, 9));
  EXPECT_FALSE(z.head.contains(1, 9));
  EXPECT_EQ(z.op, EditOp::Zero);

  InterventionSpec m = parse_intervention("layers.0:4.ffn.act[neuron=17|90, pos=-1]=mean(ref.h5)");
  EXPECT_EQ(m.op, EditOp::Mean);
  EXPECT_EQ(m.source, "ref.h5");
  EXPECT_TRUE(m.layers.contains(3, 30));
  EXPECT_FALSE(m.layers.contains(4, 30));
  EXPECT_TRUE(m.neuron.contains(90, 1536));
  EXPECT_FALSE(m.neuron.contains(18, 1536));
  EXPECT_TRUE(m.pos.contains(8, 9));    // -1 of a 9-token prompt
  EXPECT_FALSE(m.pos.contains(7, 9));
  EXPECT_FALSE(m.pos.contains(9, 9));   // a generated token is not the prompt's last

  EXPECT_EQ(parse_intervention("layers.*.resid_post=mean").source, "");
  InterventionSpec p = parse_intervention("layers.4.resid_pre[pos=5]=patch(clean.h5)");
  EXPECT_EQ(p.op, EditOp::Patch);
  EXPECT_EQ(p.source, "clean.h5");

  InterventionSpec a = parse_intervention("layers.6.resid_pre[pos=0:]=add(4, love.h5 - hate.h5)");
  EXPECT_EQ(a.op, EditOp::Add);
  EXPECT_DOUBLE_EQ(a.c, 4);
  EXPECT_EQ(a.source, "love.h5");
  EXPECT_EQ(a.minus, "hate.h5");
  EXPECT_FALSE(a.aligned);
  InterventionSpec aa = parse_intervention("layers.6.resid_pre=add(4, love.h5 - hate.h5 , aligned)");
  EXPECT_TRUE(aa.aligned);
  EXPECT_EQ(aa.minus, "hate.h5");
  InterventionSpec av = parse_intervention("embed=add(-2.5, steer.json)");
  EXPECT_EQ(av.vector_file, "steer.json");
  EXPECT_DOUBLE_EQ(av.c, -2.5);

  InterventionSpec s = parse_intervention("layers.2.attn.probs[head=1,key=0,step=1:]=scale(0.5)");
  EXPECT_EQ(s.op, EditOp::Scale);
  EXPECT_DOUBLE_EQ(s.c, 0.5);
  EXPECT_TRUE(s.key.contains(0, 10));
  EXPECT_TRUE(s.step.contains(3, IndexSet::kOpen));
  EXPECT_FALSE(s.step.contains(0, IndexSet::kOpen));
}

TEST(InterventionSpec, CanonicalTextRoundTrips) {
  for (const char* text :
       {"layers.3.attn.z[head=2]=zero", "layers.0:4.ffn.act[neuron=17|90,pos=-1]=mean(ref.h5)",
        "layers.*.resid_post=mean", "layers.6.resid_pre[pos=2:]=add(4, love.h5 - hate.h5)", "embed=add(-2.5, steer.json)",
        "layers.6.resid_pre=add(4, love.h5 - hate.h5, aligned)", "layers.6.resid_pre=add(4, love.h5, aligned)",
        "layers.2.attn.probs[head=1,key=0,row=1,step=1:]=scale(0.5)", "layers.1.attn.k_rope[head=0,pos=-3:-1]=patch(a.h5)"}) {
    const InterventionSpec s = parse_intervention(text);
    EXPECT_EQ(s.text(), text);
    EXPECT_EQ(parse_intervention(s.text()).text(), s.text());
  }
}

TEST(InterventionSpec, JsonObjectMeansTheSameAsText) {
  const nlohmann::json j = {{"site", "layers.3.attn.z"}, {"head", 2}, {"pos", "-1"}, {"op", "add"}, {"c", 4}, {"vector", "v.json"}};
  const InterventionSpec s = intervention_from_json(j, "/data", "test");
  EXPECT_EQ(s.text(), "layers.3.attn.z[head=2,pos=-1]=add(4, /data/v.json)");
  EXPECT_EQ(intervention_from_json(nlohmann::json("embed=zero"), "", "test").text(), "embed=zero");
  const nlohmann::json aligned = {{"site", "layers.6.resid_pre"}, {"op", "add"}, {"c", 4}, {"source", "a.h5"},
                                  {"minus", "b.h5"}, {"aligned", true}};
  EXPECT_EQ(intervention_from_json(aligned, "/d", "test").text(), "layers.6.resid_pre=add(4, /d/a.h5 - /d/b.h5, aligned)");
  nlohmann::json not_bool = aligned;
  not_bool["aligned"] = "yes";
  EXPECT_THROW(intervention_from_json(not_bool, "", "t"), std::invalid_argument);
  EXPECT_THROW(intervention_from_json(nlohmann::json{{"site", "embed"}, {"op", "zero"}, {"heads", 1}}, "", "t"),
               std::invalid_argument);
}

TEST(InterventionSpec, FileOfInterventions) {
  lmscope::testing_util::TempDir tmp;
  const std::string dir = tmp.str();
  const std::string path = dir + "/iv.json";
  std::ofstream(path) << R"js([{"site": "layers.1.attn.z", "head": 0, "op": "zero"}, "layers.0.resid_pre=add(2, v.txt)"])js";
  const auto specs = load_interventions_file(path);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0].text(), "layers.1.attn.z[head=0]=zero");
  EXPECT_EQ(specs[1].vector_file, dir + "/v.txt");   // relative to the file
  std::ofstream(path) << R"({"site": "embed"})";
  EXPECT_THROW(load_interventions_file(path), std::runtime_error);
  EXPECT_THROW(load_interventions_file(dir + "/missing.json"), std::runtime_error);
}

TEST(InterventionSpec, MalformedSpecsAreOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"layers.3.attn.zz=zero", "unknown site 'layers.3.attn.zz'"},
      {"layers.3.attn.z=ablate", "unknown op 'ablate'"},
      {"layers.3.attn.z", "no '=OP'"},
      {"layers.3.resid_pre[head=1]=zero", "selector 'head' does not apply to resid_pre"},
      {"layers.3.attn.z[neuron=1]=zero", "selector 'neuron' does not apply to attn.z"},
      {"layers.3.attn.z[head=-1]=zero", "head '-1' is negative"},
      {"layers.3.attn.z[head=x]=zero", "head 'x' is not an index"},
      {"layers.3.attn.z[head=4:2]=zero", "empty range"},
      {"layers.3.attn.z[head=1,head=2]=zero", "given twice"},
      {"layers.3.attn.z[color=1]=zero", "unknown selector 'color'"},
      {"layers.3.resid_pre=scale(nan)", "is not a finite number"},
      {"layers.3.resid_pre=scale", "scale needs a factor"},
      {"layers.3.resid_pre=add(2)", "add needs a coefficient and a vector"},
      {"layers.3.resid_pre=add(2, a.h5 - b.h5, by_row)", "unknown third argument 'by_row'"},
      {"layers.3.resid_pre=add(2, steer.json, aligned)", "a vector has no positions to align"},
      {"layers.3.resid_pre=patch", "patch needs the trace"},
      {"layers.3.resid_pre=patch(a.json)", "patch needs the trace"},
      {"layers.3.resid_pre=zero(1)", "takes no arguments"},
      {"layers.x.resid_pre=zero", "layer 'x' is not an index"},
      {"", "empty"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string e = error_of(text);
    EXPECT_NE(e.find(expected), std::string::npos) << text << " -> " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
}

// Selectors and numbers that were accepted and then edited nothing (or everything, with inf).
TEST(InterventionSpec, TheGrammarRefusesWhatNoRunCanSelect) {
  // 1e39 is a finite double and an infinite float32: the forward was all NaN.
  EXPECT_NE(error_of("layers.1.resid_pre=scale(1e39)").find("past float32's range"), std::string::npos);
  EXPECT_NE(error_of("embed=add(-4e38, v.json)").find("past float32's range"), std::string::npos);
  EXPECT_EQ(error_of("layers.1.resid_pre=scale(3e38)"), "(no error)");
  // Both ends from the end, the second before the first: empty on every prompt.
  EXPECT_NE(error_of("layers.1.resid_pre[pos=-1:-3]=zero").find("is an empty range"), std::string::npos);
  EXPECT_EQ(error_of("layers.1.resid_pre[pos=-3:-1]=zero"), "(no error)");
  EXPECT_EQ(error_of("layers.1.resid_pre[pos=-3:5]=zero"), "(no error)");   // depends on the prompt: checked at the run
  // -2^63: the bounds check computed -a and overflowed.
  EXPECT_NE(error_of("layers.1.resid_pre[pos=-9223372036854775808]=zero").find("beyond any axis"), std::string::npos);
  EXPECT_NE(error_of("layers.1.attn.probs[key=4294967296]=zero").find("beyond any axis"), std::string::npos);
}

// The sites are the hook table's editable hooks: global ones by their name, per-layer ones after
// layers.L.; each selector applies where the hook has its axis (head: H or Hkv, neuron: F, key: S).
TEST(InterventionSpec, SitesAndSelectorsComeFromTheHookTable) {
  for (Hook h : editable_hooks()) {
    const std::string generic = hook_generic_name(h);
    const std::string site = hook_info(h).per_layer ? "layers.2." + generic.substr(9) : generic;
    const InterventionSpec s = parse_intervention(site + "=zero");
    EXPECT_EQ(s.hook, h) << site;
    EXPECT_EQ(s.text(), site + "=zero");
  }
  EXPECT_EQ(parse_intervention("final_norm[pos=-1]=scale(2)").text(), "final_norm[pos=-1]=scale(2)");
  EXPECT_EQ(parse_intervention("logits[row=0]=zero").hook, Hook::Logits);
  EXPECT_EQ(parse_intervention("layers.1.attn.scores[head=1,key=0]=zero").key.text(), "0");
  EXPECT_EQ(parse_intervention("layers.1.ffn.gate[neuron=3]=zero").neuron.text(), "3");
  EXPECT_EQ(parse_intervention("layers.1.attn.k_norm[head=1]=zero").head.text(), "1");
  EXPECT_NE(error_of("final_norm[head=1]=zero").find("selector 'head' does not apply to final_norm"), std::string::npos);
  EXPECT_NE(error_of("layers.1.attn.z[key=1]=zero").find("(key: attn.scores, attn.probs)"), std::string::npos);
  EXPECT_NE(error_of("layers.1.attn.z[neuron=1]=zero").find("(neuron: ffn.gate, ffn.up, ffn.act)"), std::string::npos);
  // Read-only hooks are no sites, whatever their spelling.
  for (const char* read_only : {"tokens.input_ids=zero", "mask.combined=zero", "kv.1.k=zero", "layers.1.k=zero",
                                "sample.probs=zero", "lens.layers.1.logits=zero", "quant.final_norm.q8=zero"})
    EXPECT_NE(error_of(read_only).find("unknown site"), std::string::npos) << read_only;
}
