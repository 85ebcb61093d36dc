// StopStringMatcher against the examples of HF's StopStringCriteria docstring (transformers
// generation/stopping_criteria.py): which token sequences end a row on the stop string "stop".
#include "generate/stop.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>

namespace lmscope {
namespace {

// A toy vocabulary: id -> bytes.
const std::map<int32_t, std::string> kVocab = {{1, "st"}, {2, "op"}, {3, "stop"}, {4, "opera"}, {5, "sto"},
                                               {6, "pper"}, {7, "las"}, {8, "topper"}, {9, "s"}, {10, "to"},
                                               {11, "pped"}, {12, "at"}, {13, "tion"}, {14, "\n"}, {15, ""}};

std::string bytes_of(int32_t id) { return kVocab.at(id); }

// Pushes `ids` one by one after `prompt`; the step (0-based) at which the row stops, or -1.
int stops_at(const std::vector<std::string>& strings, const std::vector<int32_t>& prompt,
             const std::vector<int32_t>& ids) {
  StopStringMatcher m(strings, bytes_of, {prompt});
  for (size_t i = 0; i < ids.size(); ++i)
    if (m.push(0, ids[i])) return int(i);
  return -1;
}

TEST(StopStrings, HfDocstringExamplesMatch) {
  // ["st", "op"], ["stop"], ["st", "opera"], ["sto", "pper"], ["las", "topper"], ["s", "to", "pped"]
  EXPECT_EQ(stops_at({"stop"}, {}, {1, 2}), 1);
  EXPECT_EQ(stops_at({"stop"}, {}, {3}), 0);
  EXPECT_EQ(stops_at({"stop"}, {}, {1, 4}), 1);
  EXPECT_EQ(stops_at({"stop"}, {}, {5, 6}), 1);
  EXPECT_EQ(stops_at({"stop"}, {}, {7, 8}), 1);
  EXPECT_EQ(stops_at({"stop"}, {}, {9, 10, 11}), 2);
}

TEST(StopStrings, HfDocstringNonMatchesAfterTheEnd) {
  // ["stop", "at"], ["st", "op", "at"], ["st", "opera", "tion"]: the match is found at the
  // step that completes it, never later.
  EXPECT_EQ(stops_at({"stop"}, {}, {3, 12}), 0);
  StopStringMatcher m({"stop"}, bytes_of, {{}});
  EXPECT_FALSE(m.push(0, 12));
  EXPECT_FALSE(m.push(0, 13));  // "attion": no "stop"
}

TEST(StopStrings, PromptOnlyOccurrenceNeverMatches) {
  // "stop" lies entirely in the prompt: the first new token does not end it.
  EXPECT_EQ(stops_at({"stop"}, {3}, {12, 13}), -1);
  // ...but a string that starts in the prompt and ends in the new token does (HF reads input_ids).
  EXPECT_EQ(stops_at({"stop"}, {1}, {2}), 0);
  EXPECT_EQ(stops_at({"\n\n"}, {14}, {14}), 0);
}

TEST(StopStrings, SeveralStringsRowsAndEmptyTokens) {
  StopStringMatcher m({"zzz", "pper"}, bytes_of, {{}, {5}});
  EXPECT_FALSE(m.push(0, 15));  // a token with no bytes ends nothing
  EXPECT_FALSE(m.push(0, 9));
  EXPECT_TRUE(m.push(1, 6));    // row 1: "sto" + "pper"
  EXPECT_FALSE(m.push(0, 11));  // row 0: "s" + "pped": no "pper"
  EXPECT_THROW(StopStringMatcher({""}, bytes_of, {{}}), std::invalid_argument);
  EXPECT_THROW(StopStringMatcher({"a"}, nullptr, {{}}), std::invalid_argument);
  EXPECT_STREQ(stop_reason_name(StopReason::StopString), "stop_string");
}

}  // namespace
}  // namespace lmscope
