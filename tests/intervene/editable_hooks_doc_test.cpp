// docs/hooks.md, "Which hooks can be edited", against the hook table (HookInfo::editable): the
// list of editable hooks is the table's, in its order, and every read-only hook belongs to a
// group the doc gives a reason for. A hook added or made editable without its doc line fails here.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "intervene/spec.h"
#include "trace/hooks.h"
#include "trace/select.h"

using namespace lmscope;

namespace {

// The `quoted` names of the doc's lines after `marker`, up to the next empty line.
std::vector<std::string> names_after(const std::string& marker) {
  std::ifstream in(std::string(LMSCOPE_SOURCE_DIR) + "/docs/hooks.md");
  std::string line;
  bool inside = false;
  std::vector<std::string> names;
  while (std::getline(in, line)) {
    if (line == marker) {
      inside = true;
      continue;
    }
    if (!inside) continue;
    if (line.empty()) break;
    // A read-only group's line names its globs before the colon: "- `mask.*`, `rope.*`: ..."
    const std::string names_part = line.rfind("- ", 0) == 0 ? line.substr(0, line.find(':')) : line;
    static const std::regex quoted("`([^`]+)`");
    for (std::sregex_iterator it(names_part.begin(), names_part.end(), quoted), end; it != end; ++it)
      names.push_back((*it)[1]);
  }
  return names;
}

}  // namespace

TEST(EditableHooksDoc, TheListIsTheTables) {
  const std::vector<std::string> doc = names_after("<!-- editable hooks: -->");
  EXPECT_EQ(doc, intervention_site_names()) << "docs/hooks.md's list of editable hooks is not the table's";
}

TEST(EditableHooksDoc, EveryReadOnlyHookHasAReason) {
  const std::vector<std::string> groups = names_after("<!-- read-only groups: -->");
  ASSERT_FALSE(groups.empty());
  for (const HookInfo& info : all_hooks()) {
    const std::string name = hook_name(info.id, 0);
    EXPECT_EQ(match_any(groups, name), !info.editable)
        << name << (info.editable ? " is editable but in a read-only group of docs/hooks.md"
                                  : " is read-only but in no group docs/hooks.md gives a reason for");
  }
}
