// XPR_VERSION (include/xpr/version.hpp) agrees with the CMake project version.
#include "xpr/version.hpp"

#include <gtest/gtest.h>

#include "xpr/version_generated.hpp"

TEST(Version, MatchesCMakeProject) {
  EXPECT_EQ(XPR_VERSION_MAJOR, XPR_CMAKE_VERSION_MAJOR);
  EXPECT_EQ(XPR_VERSION_MINOR, XPR_CMAKE_VERSION_MINOR);
  EXPECT_EQ(XPR_VERSION_PATCH, XPR_CMAKE_VERSION_PATCH);
}
