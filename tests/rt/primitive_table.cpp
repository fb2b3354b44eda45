// Tests of include/xpr/rt/primitive_table.hpp and of how primitives are found by name: library
// primitives are constant-initialized and listed (not registered), user primitives constructed at
// run time register themselves, constexpr-constructed ones are registered explicitly.
#include "xpr/rt/primitive_table.hpp"

#include <set>
#include <span>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "xpr/rt/jaxpr_parse.hpp"

namespace test_rt_primitive_table {

using xpr::rt::Avals;
using xpr::rt::Params;
using xpr::rt::Primitive;
using xpr::rt::ShapedArray;

TEST(PrimitiveTable, EveryLibraryPrimitiveIsFoundByItsOwnNameAndNamesAreUnique) {
  std::set<std::string> names;
  for (const Primitive* p : xpr::rt::library_primitives()) {
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(names.insert(std::string(p->name())).second) << "duplicate name " << p->name();
    EXPECT_EQ(xpr::rt::find_primitive(p->name()), p) << p->name();
  }
  EXPECT_EQ(names.size(), xpr::rt::library_primitives().size());
  // The names JAX prints, spot-checked; and one that is no primitive.
  EXPECT_EQ(xpr::rt::find_primitive("scatter-add"), &xpr::rt::scatter_add_p);
  EXPECT_EQ(xpr::rt::find_primitive("reduce_sum"), &xpr::rt::reduce_sum_p);
  EXPECT_EQ(xpr::rt::find_primitive("while"), &xpr::rt::while_p);
  EXPECT_EQ(xpr::rt::find_primitive("no_such_primitive"), nullptr);
}

// A user primitive whose constructor runs at run time registers itself.
class RunTimeUserPrim final : public Primitive {
 public:
  RunTimeUserPrim() : Primitive("table_test_runtime") {}
  Avals abstract_eval(std::span<const ShapedArray> args, const Params&) const override {
    return {args[0]};
  }
};
const RunTimeUserPrim runtime_user_p;

// One constructed at compile time does not (nothing runs); register_primitive adds it.
class ConstexprUserPrim final : public Primitive {
 public:
  constexpr ConstexprUserPrim() : Primitive("table_test_constexpr") {}
  Avals abstract_eval(std::span<const ShapedArray> args, const Params&) const override {
    return {args[0]};
  }
};
constinit const ConstexprUserPrim constexpr_user_p;

TEST(PrimitiveTable, UserPrimitivesAreFoundOnceRegistered) {
  EXPECT_EQ(xpr::rt::find_primitive("table_test_runtime"), &runtime_user_p);
  EXPECT_EQ(xpr::rt::find_primitive("table_test_constexpr"), nullptr);
  xpr::rt::register_primitive(constexpr_user_p);
  EXPECT_EQ(xpr::rt::find_primitive("table_test_constexpr"), &constexpr_user_p);
  // The parser reads both.
  const xpr::rt::Jaxpr j = xpr::rt::parse_open_jaxpr(
      "{ lambda ; a:f64[3]. let b:f64[3] = table_test_runtime a; c:f64[3] = table_test_constexpr b "
      "in (c,) }");
  ASSERT_EQ(j.eqns.size(), 2u);
  EXPECT_EQ(j.eqns[0].primitive, &runtime_user_p);
  EXPECT_EQ(j.eqns[1].primitive, &constexpr_user_p);
}

TEST(PrimitiveTable, PrimitiveNameJoinsStringsLikeAStdString) {
  const xpr::rt::PrimitiveName n = xpr::rt::sin_p.name();
  EXPECT_EQ(n, "sin");
  EXPECT_EQ("'" + n + "'", "'sin'");
  EXPECT_EQ(std::string("of ") + n + std::string(" rule"), "of sin rule");
  const std::string owned = n;
  EXPECT_EQ(owned, "sin");
}

}  // namespace test_rt_primitive_table
