// Tests of rt/jaxpr_parse.hpp on text JAX itself printed, copied verbatim from JAX's
// documentation and JAX's own tests (each source cited above its text): current JAX's layout,
// `pjit`/`jit` calls with their names (`<lambda>`) and shared `let` jaxprs, parameters xpr
// drops (`out_sharding=None`, `sharding=None`), parameters JAX elides (`broadcast_in_dim 1.0`),
// and primitives xpr does not have, which are parse_errors naming them. Each parsed jaxpr is
// evaluated and checked against the closed form of the Python function that produced it.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/rt/api.hpp"

namespace test_rt_jaxpr_parse_jax {

using xpr::Array;

float f32(const Array& a) { return a.item<float>(); }
std::vector<float> f32s(const Array& a) { return a.to_vector<float>(); }

/// The jaxpr `text` parsed, run on `args`.
xpr::rt::Arrays run(const std::string& text, std::vector<Array> args,
                    std::vector<Array> consts = {}) {
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(text, std::move(consts));
  xpr::typecheck_jaxpr(j);
  return xpr::eval_jaxpr(j, args);
}

// ---- https://docs.jax.dev/en/latest/_autosummary/jax.make_jaxpr.html ---------------------------
// def f(x): return jax.numpy.sin(jax.numpy.cos(x))

TEST(JaxprParseJax, MakeJaxprDocstring) {
  const float x = 3.0f;
  // >>> jax.make_jaxpr(f)(3.0)
  Array y =
      run("{ lambda ; a:f32[]. let b:f32[] = cos a; c:f32[] = sin b in (c,) }", {Array(x)})[0];
  EXPECT_FLOAT_EQ(f32(y), std::sin(std::cos(x)));
  // >>> jax.make_jaxpr(jax.grad(f))(3.0)
  Array g =
      run("{ lambda ; a:f32[]. let\n"
          "    b:f32[] = cos a\n"
          "    c:f32[] = sin a\n"
          "    _:f32[] = sin b\n"
          "    d:f32[] = cos b\n"
          "    e:f32[] = mul 1.0:f32[] d\n"
          "    f:f32[] = neg e\n"
          "    g:f32[] = mul f c\n"
          "  in (g,) }",
          {Array(x)})[0];
  EXPECT_FLOAT_EQ(f32(g), -std::cos(std::cos(x)) * std::sin(x));
}

// ---- https://docs.jax.dev/en/latest/jaxpr.html ("JAX internals: The jaxpr language") -----------

TEST(JaxprParseJax, JaxprDocsFunc1WithOutSharding) {
  // def func1(first, second):
  //    temp = first + jnp.sin(second) * 3.
  //    return jnp.sum(temp)
  // print(make_jaxpr(func1)(jnp.zeros(8), jnp.ones(8)))
  const std::string text =
      "{ lambda ; a:f32[8] b:f32[8]. let\n"
      "    c:f32[8] = sin b\n"
      "    d:f32[8] = mul c 3.0:f32[]\n"
      "    e:f32[8] = add a d\n"
      "    f:f32[] = reduce_sum[axes=(0,) out_sharding=None] e\n"
      "  in (f,) }";
  Array first = xpr::astype(xpr::arange(8.0), xpr::DType::float32);
  Array second = xpr::astype(xpr::ones({8}), xpr::DType::float32);
  Array s = run(text, {first, second})[0];
  EXPECT_NEAR(f32(s), 28.0f + 8 * 3 * std::sin(1.0f), 1e-4);
  // out_sharding says where the result lives, not what it is: it is dropped.
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(text);
  EXPECT_FALSE(j.jaxpr.eqns[3].params.contains("out_sharding"));
}

TEST(JaxprParseJax, JaxprDocsCondWithTupleOperandsAndConstvar) {
  // def func7(arg):
  //   return lax.cond(arg >= 0., lambda xtrue: xtrue + 3., lambda xfalse: xfalse - 3., arg)
  // print(make_jaxpr(func7)(5.))
  const std::string func7 =
      "{ lambda ; a:f32[]. let\n"
      "    b:bool[] = ge a 0.0:f32[]\n"
      "    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] b\n"
      "    d:f32[] = cond[\n"
      "      branches=(\n"
      "        { lambda ; e:f32[]. let f:f32[] = sub e 3.0:f32[] in (f,) }\n"
      "        { lambda ; g:f32[]. let h:f32[] = add g 3.0:f32[] in (h,) }\n"
      "      )\n"
      "    ] c a\n"
      "  in (d,) }";
  EXPECT_EQ(f32(run(func7, {Array(5.0f)})[0]), 8.0f);
  EXPECT_EQ(f32(run(func7, {Array(-5.0f)})[0]), -8.0f);

  // def func8(arg1, arg2):  # Where `arg2` is a pair.
  //   return lax.cond(arg1 >= 0.,
  //                   lambda xtrue: xtrue[0],
  //                   lambda xfalse: jnp.array([1]) + xfalse[1],
  //                   arg2)
  // print(make_jaxpr(func8)(5., (jnp.zeros(1), 2.)))
  const std::string func8 =
      "{ lambda a:i32[1]; b:f32[] c:f32[1] d:f32[]. let\n"
      "    e:bool[] = ge b 0.0:f32[]\n"
      "    f:i32[] = convert_element_type[new_dtype=int32 weak_type=False] e\n"
      "    g:f32[1] = cond[\n"
      "      branches=(\n"
      "        { lambda ; h:i32[1] i:f32[1] j:f32[]. let\n"
      "            k:f32[1] = convert_element_type[new_dtype=float32 weak_type=True] h\n"
      "            l:f32[1] = add k j\n"
      "          in (l,) }\n"
      "        { lambda ; m:i32[1] n:f32[1] o:f32[]. let  in (n,) }\n"
      "      )\n"
      "    ] f a c d\n"
      "  in (g,) }";
  Array one = xpr::array({1});
  Array zeros = xpr::astype(xpr::zeros({1}), xpr::DType::float32);
  EXPECT_EQ(f32s(run(func8, {Array(5.0f), zeros, Array(2.0f)}, {one})[0]),
            std::vector<float>{0.0f});
  EXPECT_EQ(f32s(run(func8, {Array(-5.0f), zeros, Array(2.0f)}, {one})[0]),
            std::vector<float>{3.0f});
}

TEST(JaxprParseJax, JaxprDocsLoopsWithElidedBroadcastParams) {
  // def func10(arg, n):
  //   ones = jnp.ones(arg.shape)  # A constant.
  //   return lax.fori_loop(0, n,
  //                        lambda i, carry: carry + ones * 3. + arg,
  //                        arg + ones)
  // print(make_jaxpr(func10)(np.ones(16), 5))
  //
  // `broadcast_in_dim 1.0:f32[]` has no parameters: JAX elides them for a scalar operand; the
  // shape is the declared result's.
  const std::string func10 =
      "{ lambda ; a:f32[16] b:i32[]. let\n"
      "    c:f32[16] = broadcast_in_dim 1.0:f32[]\n"
      "    d:f32[16] = add a c\n"
      "    _:i32[] _:i32[] e:f32[16] = while[\n"
      "      body_jaxpr={ lambda ; f:f32[16] g:f32[16] h:i32[] i:i32[] j:f32[16]. let\n"
      "          k:i32[] = add h 1:i32[]\n"
      "          l:f32[16] = mul f 3.0:f32[]\n"
      "          m:f32[16] = add j l\n"
      "          n:f32[16] = add m g\n"
      "        in (k, i, n) }\n"
      "      body_nconsts=2\n"
      "      cond_jaxpr={ lambda ; o:i32[] p:i32[] q:f32[16]. let\n"
      "          r:bool[] = lt o p\n"
      "        in (r,) }\n"
      "      cond_nconsts=0\n"
      "    ] c a 0:i32[] b d\n"
      "  in (e,) }";
  Array arg = xpr::astype(xpr::ones({16}), xpr::DType::float32);
  // carry_0 = arg + 1 = 2; each step adds 3 + 1: after 5 steps 22.
  std::vector<float> e = f32s(run(func10, {arg, Array(5)})[0]);
  ASSERT_EQ(e.size(), 16u);
  EXPECT_EQ(e[0], 22.0f);
  EXPECT_EQ(e[15], 22.0f);

  // def func11(arr, extra):
  //   ones = jnp.ones(arr.shape)  #  A constant
  //   def body(carry, aelems):
  //     ae1, ae2 = aelems
  //     return (carry + ae1 * ae2 + extra, carry)
  //   return lax.scan(body, 0., (arr, ones))
  // print(make_jaxpr(func11)(np.ones(16), 5.))
  const std::string func11 =
      "{ lambda ; a:f32[16] b:f32[]. let\n"
      "    c:f32[16] = broadcast_in_dim 1.0:f32[]\n"
      "    d:f32[] e:f32[16] = scan[\n"
      "      jaxpr={ lambda ; f:f32[] g:f32[] h:f32[] i:f32[]. let\n"
      "          j:f32[] = mul h i\n"
      "          k:f32[] = convert_element_type[new_dtype=float32 weak_type=False] g\n"
      "          l:f32[] = add k j\n"
      "          m:f32[] = convert_element_type[new_dtype=float32 weak_type=False] f\n"
      "          n:f32[] = add l m\n"
      "        in (n, g) }\n"
      "      length=16\n"
      "      num_carry=1\n"
      "      num_consts=1\n"
      "      reverse=False\n"
      "      unroll=1\n"
      "    ] b 0.0:f32[] a c\n"
      "  in (d, e) }";
  xpr::rt::Arrays out = run(func11, {arg, Array(5.0f)});
  EXPECT_EQ(f32(out[0]), 16 * 6.0f);  // each step adds 1 * 1 + 5
  EXPECT_EQ(f32s(out[1])[3], 18.0f);  // the carry before step 3
}

TEST(JaxprParseJax, JaxprDocsJitPrimitive) {
  // def func12(arg):
  //   @jit
  //   def inner(x):
  //     return x + arg * jnp.ones(1)  # Include a constant in the inner function.
  //   return arg + inner(arg - 2.)
  // print(make_jaxpr(func12)(1.))
  //
  // Today's JAX prints its jit primitive as `jit` (older versions `pjit`), and names the inner
  // jaxpr's variables afresh (`a`, `b`, `c` again).
  const std::string text =
      "{ lambda ; a:f32[]. let\n"
      "    b:f32[] = sub a 2.0:f32[]\n"
      "    c:f32[1] = jit[\n"
      "      name=inner\n"
      "      jaxpr={ lambda ; a:f32[] b:f32[]. let\n"
      "          d:f32[1] = broadcast_in_dim 1.0:f32[]\n"
      "          e:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
      "          f:f32[1] = mul e d\n"
      "          g:f32[] = convert_element_type[new_dtype=float32 weak_type=False] b\n"
      "          c:f32[1] = add g f\n"
      "        in (c,) }\n"
      "    ] a b\n"
      "    h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a\n"
      "    i:f32[1] = add h c\n"
      "  in (i,) }";
  xpr::ClosedJaxpr j = xpr::parse_jaxpr(text);
  EXPECT_EQ(j.jaxpr.eqns[1].primitive, &xpr::rt::pjit_p);
  // arg + (arg - 2 + arg) at arg = 1: 1.
  EXPECT_EQ(f32s(xpr::eval_jaxpr(j, {Array(1.0f)})[0]), std::vector<float>{1.0f});
  EXPECT_EQ(f32s(xpr::eval_jaxpr(j, {Array(4.0f)})[0]), std::vector<float>{10.0f});
  // And it differentiates: d/darg [3 arg - 2] = 3.
  auto f = [&](Array x) { return xpr::sum(xpr::eval_jaxpr(j, {x})[0]); };
  EXPECT_EQ(f32(xpr::grad(f)(Array(1.0f))), 3.0f);
}

TEST(JaxprParseJax, UnknownPrimitiveIsNamed) {
  // def one_of_three(index, arg):
  //   return lax.switch(index, [lambda x: x + 1., lambda x: x - 2., lambda x: x + 3.], arg)
  // print(make_jaxpr(one_of_three)(1, 5.))
  const std::string text =
      "{ lambda ; a:i32[] b:f32[]. let\n"
      "    c:i32[] = convert_element_type[new_dtype=int32 weak_type=False] a\n"
      "    d:i32[] = clamp 0:i32[] c 2:i32[]\n"
      "    e:f32[] = cond[\n"
      "      branches=(\n"
      "        { lambda ; f:f32[]. let g:f32[] = add f 1.0:f32[] in (g,) }\n"
      "        { lambda ; h:f32[]. let i:f32[] = sub h 2.0:f32[] in (i,) }\n"
      "        { lambda ; j:f32[]. let k:f32[] = add j 3.0:f32[] in (k,) }\n"
      "      )\n"
      "    ] d b\n"
      "  in (e,) }";
  if (xpr::rt::find_primitive("clamp")) {
    EXPECT_EQ(f32(run(text, {Array(1), Array(5.0f)})[0]), 3.0f);
    return;
  }
  try {
    xpr::parse_jaxpr(text);
    ADD_FAILURE() << "no parse_error";
  } catch (const xpr::parse_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown primitive 'clamp'"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
}

// ---- JAX's tests/pjit_test.py, PJitTest.test_pretty_print* (JAX's expected printed text) --------

TEST(JaxprParseJax, PjitPrettyPrintTests) {
  Array x = xpr::array({4.2f});
  // test_pretty_print: f = pjit(lambda x: x**2); g = pjit(lambda x: f(x) + f(x))
  xpr::rt::Arrays a =
      run("let lambda = { lambda ; a:f32[1]. let b:f32[1] = integer_pow[y=2] a in (b,) } in\n"
          "{ lambda ; c:f32[1]. let\n"
          "    d:f32[1] = pjit[\n"
          "      name=<lambda>\n"
          "      jaxpr={ lambda ; c:f32[1]. let\n"
          "          e:f32[1] = pjit[name=<lambda> jaxpr=lambda] c\n"
          "          f:f32[1] = pjit[name=<lambda> jaxpr=lambda] c\n"
          "          d:f32[1] = add e f\n"
          "        in (d,) }\n"
          "    ] c\n"
          "  in (d,) }",
          {x});
  EXPECT_FLOAT_EQ(f32s(a[0])[0], 2 * 4.2f * 4.2f);

  // test_pretty_print_pjit_id: f = pjit(lambda x, y: x); make_jaxpr(lambda y: y + f(y, y))
  EXPECT_FLOAT_EQ(f32s(run("{ lambda ; a:f32[1]. let\n"
                           "    b:f32[1] = pjit[\n"
                           "      name=<lambda>\n"
                           "      jaxpr={ lambda ; a:f32[1] c:f32[1]. let  in (a,) }\n"
                           "    ] a a\n"
                           "    d:f32[1] = add a b\n"
                           "  in (d,) }",
                           {x})[0])[0],
                  8.4f);

  // test_pretty_print_with_constant_pjit_arg: f = pjit(lambda x, y: x * y);
  // make_jaxpr(lambda x: f(x, np.float32(1.0)))
  EXPECT_FLOAT_EQ(f32s(run("{ lambda ; a:f32[1]. let\n"
                           "    b:f32[1] = pjit[\n"
                           "      name=<lambda>\n"
                           "      jaxpr={ lambda ; a:f32[1] c:f32[]. let b:f32[1] = mul a c in "
                           "(b,) }\n"
                           "    ] a 1.0:f32[]\n"
                           "  in (b,) }",
                           {x})[0])[0],
                  4.2f);

  // test_pretty_print_with_literal_outvar: f = pjit(lambda x: (np.int32(2), x))
  xpr::rt::Arrays lit =
      run("{ lambda ; a:f32[1]. let\n"
          "    b:i32[] c:f32[1] = pjit[\n"
          "      name=<lambda>\n"
          "      jaxpr={ lambda ; a:f32[1]. let  in (2:i32[], a) }\n"
          "    ] a\n"
          "  in (b, c) }",
          {x});
  EXPECT_EQ(lit[0].item<int>(), 2);

  // test_pretty_print_with_closure: g(x, y) = f(x) + f(y) with f(x) = x * y, both pjit.
  EXPECT_FLOAT_EQ(f32s(run("let f = { lambda ; a:f32[1] b:f32[1]. let c:f32[1] = mul b a in (c,) "
                           "} in\n"
                           "{ lambda ; d:f32[1] e:f32[1]. let\n"
                           "    g:f32[1] = pjit[\n"
                           "      name=g\n"
                           "      jaxpr={ lambda ; d:f32[1] e:f32[1]. let\n"
                           "          h:f32[1] = pjit[name=f jaxpr=f] e d\n"
                           "          i:f32[1] = pjit[name=f jaxpr=f] e e\n"
                           "          g:f32[1] = add h i\n"
                           "        in (g,) }\n"
                           "    ] d e\n"
                           "  in (g,) }",
                           {x, xpr::array({2.0f})})[0])[0],
                  2 * 4.2f + 4.0f);

  // test_pretty_print_with_name_clash: SizeOneBroadcastingOfNaryOperators below.
}

// ---- forms of other JAX versions ---------------------------------------------------------------

TEST(JaxprParseJax, OtherVersionsParameters) {
  // JAX 0.4.x printed pjit with all its parameters, and dot_general with `precision=None
  // preferred_element_type=float32`; JAX 0.6+ adds `out_sharding=None` / `sharding=None`. The
  // placement parameters are dropped, and preferred_element_type is accepted when it is the
  // operands' dtype.
  const std::string text =
      "{ lambda ; a:f32[2,3] b:f32[3]. let\n"
      "    c:f32[2] = pjit[\n"
      "      donated_invars=(False, False)\n"
      "      in_shardings=(UnspecifiedValue, UnspecifiedValue)\n"
      "      inline=False\n"
      "      jaxpr={ lambda ; d:f32[2,3] e:f32[3]. let\n"
      "          f:f32[2] = dot_general[\n"
      "            dimension_numbers=(([1], [0]), ([], []))\n"
      "            out_sharding=None\n"
      "            precision=None\n"
      "            preferred_element_type=float32\n"
      "          ] d e\n"
      "          g:f32[2,1] = broadcast_in_dim[\n"
      "            broadcast_dimensions=(0,)\n"
      "            shape=(2, 1)\n"
      "            sharding=None\n"
      "          ] f\n"
      "          h:f32[2] = reshape[dimensions=None new_sizes=(2,) sharding=None] g\n"
      "        in (h,) }\n"
      "      keep_unused=False\n"
      "      name=matvec\n"
      "      out_shardings=(UnspecifiedValue,)\n"
      "      resource_env=None\n"
      "    ] a b\n"
      "  in (c,) }";
  Array a = xpr::astype(xpr::array({{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}), xpr::DType::float32);
  Array b = xpr::astype(xpr::array({1.0, 0.0, -1.0}), xpr::DType::float32);
  EXPECT_EQ(f32s(run(text, {a, b})[0]), (std::vector<float>{-2.0f, -2.0f}));
  // Dimension numbers written as tuples, as JAX's op names print them.
  EXPECT_EQ(f32s(run("{ lambda ; a:f32[2,3] b:f32[3]. let\n"
                     "    c:f32[2] = dot_general[dimension_numbers=(((1,), (0,)), ((), ())) "
                     "precision=None preferred_element_type=float32] a b\n"
                     "  in (c,) }",
                     {a, b})[0]),
            (std::vector<float>{-2.0f, -2.0f}));
  // A preferred_element_type that changes the result's dtype is refused, saying why.
  try {
    xpr::parse_jaxpr(
        "{ lambda ; a:i32[3] b:i32[3]. let\n"
        "    c:f32[] = dot_general[dimension_numbers=(([0], [0]), ([], [])) "
        "preferred_element_type=float32] a b\n"
        "  in (c,) }");
    ADD_FAILURE() << "no type_error";
  } catch (const xpr::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("preferred_element_type=float32 on operands of type "
                                         "i32[3] is not supported"),
              std::string::npos)
        << e.what();
  }
  // accumulation_type other than None is refused too.
  EXPECT_THROW(xpr::parse_jaxpr("{ lambda ; a:f32[3]. let\n"
                                "    c:f32[] = dot_general[accumulation_type=float64 "
                                "dimension_numbers=(([0], [0]), ([], []))] a a\n"
                                "  in (c,) }"),
               xpr::parse_error);
}

// ---- elementwise primitives JAX 0.4.30+ prints (issue 14, item 7) ------------------------------

TEST(JaxprParseJax, FloorThenErf) {
  // def f(x): return jax.lax.erf(jnp.floor(x))
  // print(jax.make_jaxpr(f)(jnp.zeros(3, jnp.float32)))
  Array x = xpr::astype(xpr::array({-1.5, 0.25, 1.75}), xpr::DType::float32);
  std::vector<float> y =
      f32s(run("{ lambda ; a:f32[3]. let b:f32[3] = floor a; c:f32[3] = erf b in (c,) }", {x})[0]);
  const float xs[] = {-1.5f, 0.25f, 1.75f};
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FLOAT_EQ(y[i], std::erf(std::floor(xs[i])));
}

TEST(JaxprParseJax, EveryNewElementwisePrimitive) {
  // def f(x):
  //   return (jnp.square(x), jnp.exp2(x), jnp.cbrt(x), jax.lax.erf(x), jnp.floor(x),
  //           jnp.ceil(x), jax.lax.round(x), jnp.isfinite(x), jnp.copy(x))
  // print(jax.make_jaxpr(f)(jnp.zeros(4, jnp.float32)))   # JAX 0.4.36+: square is square_p
  const std::string text =
      "{ lambda ; a:f32[4]. let\n"
      "    b:f32[4] = square a\n"
      "    c:f32[4] = exp2 a\n"
      "    d:f32[4] = cbrt a\n"
      "    e:f32[4] = erf a\n"
      "    f:f32[4] = floor a\n"
      "    g:f32[4] = ceil a\n"
      "    h:f32[4] = round[rounding_method=0] a\n"
      "    i:bool[4] = is_finite a\n"
      "    j:f32[4] = copy a\n"
      "  in (b, c, d, e, f, g, h, i, j) }";
  const std::vector<float> xs{-2.5f, -0.3f, 0.5f, 8.0f};
  Array x = xpr::astype(xpr::array(std::vector<double>(xs.begin(), xs.end())), xpr::DType::float32);
  xpr::rt::Arrays out = run(text, {x});
  ASSERT_EQ(out.size(), 9u);
  for (std::size_t k = 0; k < 4; ++k) {
    const float v = xs[k];
    EXPECT_FLOAT_EQ(f32s(out[0])[k], v * v);
    EXPECT_NEAR(f32s(out[1])[k], std::exp2(v), 1e-6 * std::exp2(v));
    EXPECT_NEAR(f32s(out[2])[k], std::cbrt(v), 1e-6 * std::abs(std::cbrt(v)));
    EXPECT_NEAR(f32s(out[3])[k], std::erf(v), 1e-6);
    EXPECT_EQ(f32s(out[4])[k], std::floor(v));
    EXPECT_EQ(f32s(out[5])[k], std::ceil(v));
    EXPECT_EQ(f32s(out[6])[k], std::round(v));  // AWAY_FROM_ZERO: -2.5 -> -3, 0.5 -> 1
    EXPECT_EQ(f32s(out[8])[k], v);
  }
  EXPECT_EQ(out[7].to_vector<bool>(), (std::vector<bool>{true, true, true, true}));
  // Printed back as JAX prints them, and that text parses to the same jaxpr.
  const std::string printed = xpr::pretty_print(xpr::parse_jaxpr(text).jaxpr);
  for (const char* eqn : {"b:f32[4] = square a", "h:f32[4] = round[rounding_method=0] a",
                          "i:bool[4] = is_finite a", "j:f32[4] = copy a"})
    EXPECT_NE(printed.find(eqn), std::string::npos) << eqn << " in\n" << printed;
  EXPECT_EQ(xpr::pretty_print(xpr::parse_jaxpr(printed).jaxpr), printed);
}

TEST(JaxprParseJax, JnpRoundIsAJittedCallOfRoundToNearestEven) {
  // print(jax.make_jaxpr(jnp.round)(jnp.array([0.5, 1.5, 2.5, -2.5], jnp.float32)))
  // jnp.round is a jitted function (not inlined): a pjit around round[rounding_method=1].
  const std::string text =
      "{ lambda ; a:f32[4]. let\n"
      "    b:f32[4] = pjit[\n"
      "      name=round\n"
      "      jaxpr={ lambda ; c:f32[4]. let\n"
      "          d:f32[4] = round[rounding_method=1] c\n"
      "        in (d,) }\n"
      "    ] a\n"
      "  in (b,) }";
  Array x = xpr::astype(xpr::array({0.5, 1.5, 2.5, -2.5}), xpr::DType::float32);
  EXPECT_EQ(f32s(run(text, {x})[0]), (std::vector<float>{0.0f, 2.0f, 2.0f, -2.0f}));
  // Under Python before 3.11 JAX printed the IntEnum by name; read as the same number.
  xpr::ClosedJaxpr named = xpr::parse_jaxpr(
      "{ lambda ; a:f32[4]. let\n"
      "    b:f32[4] = round[rounding_method=RoundingMethod.TO_NEAREST_EVEN] a\n"
      "    c:f32[4] = round[rounding_method=RoundingMethod.AWAY_FROM_ZERO] a\n"
      "  in (b, c) }");
  xpr::rt::Arrays both = xpr::eval_jaxpr(named, std::vector<Array>{x});
  EXPECT_EQ(f32s(both[0]), (std::vector<float>{0.0f, 2.0f, 2.0f, -2.0f}));
  EXPECT_EQ(f32s(both[1]), (std::vector<float>{1.0f, 2.0f, 3.0f, -3.0f}));
  EXPECT_NE(xpr::pretty_print(named.jaxpr).find("round[rounding_method=1] a"), std::string::npos);
  EXPECT_THROW(xpr::parse_jaxpr("{ lambda ; a:f32[4]. let\n"
                                "    b:f32[4] = round[rounding_method=RoundingMethod.UP] a\n"
                                "  in (b,) }"),
               xpr::parse_error);
  // A rounding method lax does not have is refused.
  EXPECT_THROW(
      xpr::parse_jaxpr("{ lambda ; a:f32[4]. let b:f32[4] = round[rounding_method=7] a in (b,) }"),
      xpr::error);
}

TEST(JaxprParseJax, LogicalAndBitwiseNot) {
  // def f(x, m): return jnp.logical_not(jnp.isfinite(x)), jnp.bitwise_not(m)
  // print(jax.make_jaxpr(f)(jnp.zeros(3, jnp.float32), jnp.zeros(3, jnp.int32)))
  const std::string text =
      "{ lambda ; a:f32[3] b:i32[3]. let\n"
      "    c:bool[3] = is_finite a\n"
      "    d:bool[3] = not c\n"
      "    e:i32[3] = not b\n"
      "  in (d, e) }";
  Array x = xpr::astype(xpr::array(std::vector<double>{1.0, INFINITY, NAN}), xpr::DType::float32);
  Array m = xpr::array(std::vector<std::int32_t>{0, 7, -1});
  xpr::rt::Arrays out = run(text, {x, m});
  EXPECT_EQ(out[0].to_vector<bool>(), (std::vector<bool>{false, true, true}));
  EXPECT_EQ(out[1].to_vector<std::int32_t>(), (std::vector<std::int32_t>{-1, -8, 0}));
}

TEST(JaxprParseJax, GradOfErfOfSquare) {
  // jax.make_jaxpr(jax.grad(lambda x: jax.lax.erf(jnp.square(x))))(1.0), in the form JAX prints
  // it: JAX's jvp rules (square: 2x; erf: 2/sqrt(pi) exp(-x^2)) with their constants as inline
  // literals, the unused primal bound to `_`, the cotangent seed 1.0.
  const std::string text =
      "{ lambda ; a:f32[]. let\n"
      "    b:f32[] = square a\n"
      "    c:f32[] = mul 2.0:f32[] a\n"
      "    _:f32[] = erf b\n"
      "    d:f32[] = square b\n"
      "    e:f32[] = neg d\n"
      "    f:f32[] = exp e\n"
      "    g:f32[] = mul 1.0:f32[] 1.1283791:f32[]\n"
      "    h:f32[] = mul g f\n"
      "    i:f32[] = mul h c\n"
      "  in (i,) }";
  for (float x : {0.3f, -0.8f, 1.1f}) {
    const float want = 2.0f * x * 1.1283791f * std::exp(-x * x * x * x);
    EXPECT_NEAR(f32(run(text, {Array(x)})[0]), want, 1e-6f) << x;
  }
  // The same function traced in C++, differentiated by xpr: its second derivative too.
  auto f = [](Array x) { return xpr::erf(xpr::square(x)); };
  for (double x : {0.3, -0.8, 1.1}) {
    const double d1 = 2 * x * 1.1283791670955126 * std::exp(-x * x * x * x);  // 2/sqrt(pi)
    EXPECT_NEAR(xpr::grad(f)(Array(x)).item<double>(), d1, 1e-14);
  }
}

// ---- size-1 broadcasting of n-ary operators, add_any, custom calls without num_consts ----------

TEST(JaxprParseJax, SizeOneBroadcastingOfNaryOperators) {
  // JAX's tests/pjit_test.py, test_pretty_print_with_name_clash (JAX's expected text): `add i l`
  // of f32[1] and f32[2], which lax.add broadcasts ("broadcast compatible" operands of one rank).
  const std::string clash =
      "let f = { lambda ; a:f32[1]. let  in (a,) } in\n"
      "let f1 = { lambda ; b:f32[2]. let  in (b,) } in\n"
      "{ lambda ; c:f32[1] d:f32[2]. let\n"
      "    e:f32[2] = pjit[\n"
      "      name=g\n"
      "      jaxpr={ lambda ; c:f32[1] d:f32[2]. let\n"
      "          g:f32[1] = pjit[name=f jaxpr=f] c\n"
      "          h:f32[1] = pjit[name=f jaxpr=f] c\n"
      "          i:f32[1] = mul g h\n"
      "          j:f32[2] = pjit[name=f jaxpr=f1] d\n"
      "          k:f32[2] = pjit[name=f jaxpr=f1] d\n"
      "          l:f32[2] = mul j k\n"
      "          e:f32[2] = add i l\n"
      "        in (e,) }\n"
      "    ] c d\n"
      "  in (e,) }";
  const Array c = xpr::array({0.5f}), d = xpr::array({-1.5f, 2.0f});
  EXPECT_EQ(f32s(run(clash, {c, d})[0]), (std::vector<float>{0.25f + 2.25f, 0.25f + 4.0f}));
  // Its derivative in c sums over the broadcast: d/dc sum(c^2 + d^2) = 2 * 2c.
  const xpr::ClosedJaxpr j = xpr::parse_jaxpr(clash);
  auto loss = [&](const Array& cc) { return xpr::sum(xpr::eval_jaxpr(j, {cc, d})[0]); };
  EXPECT_FLOAT_EQ(f32s(xpr::grad(loss)(c))[0], 4 * 0.5f);
  EXPECT_FLOAT_EQ(f32s(xpr::jit(xpr::grad(loss))(c))[0], 4 * 0.5f);

  // A bias add as JAX 0.7 prints `relu(x @ w + b)`'s (broadcast to f32[1,4], then add), and a
  // comparison and a maximum with size-1 axes on either side.
  const std::string bias =
      "{ lambda ; a:f32[2,4] c:f32[4] m:f32[2,1]. let\n"
      "    e:f32[1,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 4) sharding=None] c\n"
      "    f:f32[2,4] = add a e\n"
      "    g:bool[2,4] = lt m e\n"
      "    h:f32[2,4] = max e m\n"
      "  in (f, g, h) }";
  const Array a = xpr::astype(xpr::reshape(xpr::arange(8.0), {2, 4}), xpr::DType::float32);
  const Array bias_c = xpr::array({10.0f, -1.0f, 2.5f, 0.0f});
  const Array m = xpr::array({{1.0f}, {2.5f}});
  const xpr::rt::Arrays out = run(bias, {a, bias_c, m});
  ASSERT_EQ(out[0].shape(), (xpr::Shape{2, 4}));
  for (int r = 0; r < 2; ++r)
    for (int k = 0; k < 4; ++k) {
      const float cr = bias_c.to_vector<float>()[k], mr = m.to_vector<float>()[r];
      EXPECT_EQ(out[0].to_vector<float>()[r * 4 + k], float(r * 4 + k) + cr);
      EXPECT_EQ(out[1].to_vector<bool>()[r * 4 + k], mr < cr);
      EXPECT_EQ(out[2].to_vector<float>()[r * 4 + k], std::max(cr, mr));
    }
  // Shapes that do not broadcast are still refused, naming them.
  try {
    xpr::parse_jaxpr("{ lambda ; a:f32[2,4] b:f32[3,4]. let c:f32[2,4] = add a b in (c,) }");
    ADD_FAILURE() << "no type_error";
  } catch (const xpr::type_error& e) {
    EXPECT_NE(std::string(e.what()).find("(2, 4) and (3, 4)"), std::string::npos) << e.what();
  }
}

TEST(JaxprParseJax, AddAnyIsAdd) {
  // make_jaxpr(jax.grad(lambda x: jnp.sum((x + 1) ** 2)))-style backward pass, where JAX sums
  // the two uses' cotangents with add_any.
  const std::string text =
      "{ lambda ; a:f32[3]. let\n"
      "    b:f32[3] = add a 1.0:f32[]\n"
      "    c:f32[3] = mul b b\n"
      "    _:f32[] = reduce_sum[axes=(0,) out_sharding=None] c\n"
      "    d:f32[3] = broadcast_in_dim 1.0:f32[]\n"
      "    e:f32[3] = mul b d\n"
      "    f:f32[3] = mul d b\n"
      "    g:f32[3] = add_any e f\n"
      "  in (g,) }";
  EXPECT_EQ(f32s(run(text, {xpr::array({0.5f, -1.0f, 2.0f})})[0]),
            (std::vector<float>{3.0f, 0.0f, 6.0f}));
}

TEST(JaxprParseJax, CustomCallsWithoutNumConsts) {
  // JAX's tests/custom_derivatives_test.py pretty-print tests: current JAX prints no num_consts.
  const std::string jvp_call =
      "{ lambda ; a:f32[1]. let\n"
      "    b:f32[1] = custom_jvp_call[\n"
      "      name=f\n"
      "      call_jaxpr={ lambda ; c:f32[1]. let d:f32[1] = add c 1.0:f32[] in (d,) }\n"
      "      jvp=f_jvp\n"
      "      symbolic_zeros=False\n"
      "    ] a\n"
      "  in (b,) }";
  const std::string vjp_call =
      "{ lambda ; a:f32[1]. let\n"
      "    b:f32[1] = custom_vjp_call[\n"
      "      name=f\n"
      "      bwd=f_bwd\n"
      "      call_jaxpr={ lambda ; c:f32[1]. let d:f32[1] = add c 1.0:f32[] in (d,) }\n"
      "      fwd=f_fwd\n"
      "      symbolic_zeros=False\n"
      "    ] a\n"
      "  in (b,) }";
  for (const std::string& text : {jvp_call, vjp_call}) {
    EXPECT_EQ(f32s(run(text, {xpr::array({0.7f})})[0]), (std::vector<float>{1.7f}));
    // The rules stayed in Python: differentiating says so (jit.md), as with num_consts=0.
    const xpr::ClosedJaxpr j = xpr::parse_jaxpr(text);
    auto loss = [&](const Array& x) { return xpr::sum(xpr::eval_jaxpr(j, {x})[0]); };
    try {
      xpr::grad(loss)(xpr::array({0.7f}));
      ADD_FAILURE() << "no not_implemented_error";
    } catch (const xpr::not_implemented_error& e) {
      EXPECT_NE(std::string(e.what()).find("cannot be differentiated"), std::string::npos)
          << e.what();
    }
  }
}

TEST(JaxprParseJax, AJaxprWhereARuleGoesReadsAsTheRuleStub) {
  // The text cannot carry a custom rule: a jaxpr written in a rule's place (here an eleven-
  // equation one, which the printer would name as `let jaxpr = ...` and refer to by name) reads
  // as the stub xpr prints for its own rules, and the text prints back as it reads (found by the
  // fuzz test with another seed: the name read back as a Python callable's, and the let was lost).
  std::string big = "{ lambda ; a:f32[3]. let b:f32[3] = sin a";
  for (char v = 'c'; v <= 'l'; ++v)
    big += std::string("; ") + v + ":f32[3] = sin " + static_cast<char>(v - 1);
  big += " in (l,) }";
  const std::string text =
      "{ lambda ; a:f64[3]. let\n"
      "    b:f64[3] = custom_jvp_call[\n"
      "      call_jaxpr={ lambda ; c:f64[3]. let d:f64[3] = exp c in (d,) }\n"
      "      jvp_jaxpr_fun=" +
      big +
      "\n"
      "      num_consts=0\n"
      "    ] a\n"
      "  in (b,) }";
  const xpr::ClosedJaxpr j = xpr::parse_jaxpr(text);
  const std::string printed = xpr::pretty_print(j.jaxpr);
  EXPECT_NE(printed.find("jvp_jaxpr_fun={ lambda ; . let  in () }"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("let jaxpr"), std::string::npos) << printed;
  EXPECT_EQ(xpr::pretty_print(xpr::parse_jaxpr(printed).jaxpr), printed);
  // It evaluates as its call_jaxpr does.
  EXPECT_DOUBLE_EQ(xpr::eval_jaxpr(j, {xpr::array({0.5, 1.0, 2.0})})[0].to_vector<double>()[1],
                   std::exp(1.0));
}

}  // namespace test_rt_jaxpr_parse_jax
