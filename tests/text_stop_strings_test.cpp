#include <gtest/gtest.h>

#include "text/stop_strings.h"

using ztvm::StopStrings;

TEST(StopStrings, CutsAtTheFirstStopAcrossPieces) {
  StopStrings s({"\nUser:", "###"});
  std::string out;
  for (const char* piece : {"Hello", " there\nUs", "er: more"}) out += s.push(piece);
  EXPECT_TRUE(s.stopped());
  EXPECT_EQ(out, "Hello there");
  EXPECT_EQ(s.push("ignored"), "");
}

TEST(StopStrings, HoldsBackOnlyPossiblePrefixes) {
  StopStrings s({"END"});
  EXPECT_EQ(s.push("abc E"), "abc ");  // "E" might start END
  EXPECT_EQ(s.push("X"), "EX");        // it did not
  EXPECT_EQ(s.push("EN"), "");
  EXPECT_EQ(s.flush(), "EN");           // generation ended without completing it
  EXPECT_FALSE(s.stopped());
}

TEST(StopStrings, NoStopsPassesEverythingThrough) {
  StopStrings s({});
  EXPECT_EQ(s.push("a"), "a");
  EXPECT_EQ(s.flush(), "");
}
