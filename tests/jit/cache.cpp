// SPDX-License-Identifier: MIT
// Tests of include/xpr/codegen/{cache,compiler}.hpp: the disk cache across processes, corrupt
// entries, a broken or missing compiler, untrusted cache directories, and many threads asking for
// the same kernels. Cases needing a fresh process re-run this executable with
// --gtest_filter=JitChild.Run and XPR_JIT_CHILD naming what to do.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <spawn.h>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "xpr/codegen/execute.hpp"
#include "xpr/xpr.hpp"

extern char** environ;

namespace test_jit_cache {

using namespace xpr;
namespace fs = std::filesystem;

inline std::string fresh_dir(const std::string& tag) {
  std::string t = (fs::temp_directory_path() / ("xpr-jit-test-" + tag + "-XXXXXX")).string();
  std::vector<char> b(t.begin(), t.end());
  b.push_back('\0');
  EXPECT_NE(::mkdtemp(b.data()), nullptr);
  return b.data();
}

inline std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct ChildResult {
  int status = -1;
  std::string out, err;
  std::uint64_t compiles = 0, memory_hits = 0, disk_hits = 0;
};

/// Runs this test executable's JitChild.Run with extra environment variables.
inline ChildResult run_child(const std::vector<std::string>& env_extra, const std::string& logdir) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string s = *e;
    bool overridden = false;
    for (const std::string& x : env_extra)
      if (s.substr(0, s.find('=') + 1) == x.substr(0, x.find('=') + 1)) overridden = true;
    if (!overridden) env.push_back(s);
  }
  for (const std::string& x : env_extra) env.push_back(x);
  std::vector<char*> envp;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::string filter = "--gtest_filter=JitChild.Run";
  std::vector<char*> argv = {exe.data(), filter.data(), nullptr};
  std::string out = logdir + "/child.out", err = logdir + "/child.err";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  ChildResult r;
  if (posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), envp.data()) != 0) return r;
  posix_spawn_file_actions_destroy(&fa);
  int st = 0;
  waitpid(pid, &st, 0);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  auto at = r.out.find("STATS ");
  if (at != std::string::npos) {
    std::istringstream s(r.out.substr(at + 6));
    s >> r.compiles >> r.memory_hits >> r.disk_hits;
  }
  return r;
}

inline std::string nonce() { return std::to_string(std::random_device{}() % 1000000) + ".5"; }

/// Two functions with a per-run constant (so the disk cache has not seen them).
inline std::vector<ClosedJaxpr> child_jaxprs(double c) {
  Array x = xpr::linspace(0.0, 1.0, 11);
  return {make_jaxpr([c](const Array& v) { return xpr::sin(v) * c - v; })(x),
          make_jaxpr([c](const Array& v) { return xpr::sum(xpr::exp(v) * c); })(x)};
}

// The child: what it does is chosen by XPR_JIT_CHILD; skipped when run as an ordinary test.
TEST(JitChild, Run) {
  const char* mode = std::getenv("XPR_JIT_CHILD");
  if (!mode) GTEST_SKIP() << "run by the other tests in a fresh process";
  const double c = std::atof(std::getenv("XPR_JIT_NONCE"));
  const std::string m = mode;
  Array x = xpr::linspace(0.0, 1.0, 11);
  if (m == "kernels") {
    for (const ClosedJaxpr& j : child_jaxprs(c)) {
      auto got = codegen::execute(j, std::vector<Array>{x});
      auto want = eval_jaxpr(j, {x});
      for (std::int64_t i = 0; i < got[0].size(); ++i)
        ASSERT_NEAR(got[0].data<double>()[i], want[0].data<double>()[i],
                    1e-12 * (1 + std::abs(want[0].data<double>()[i])));  // sums reassociate
    }
  } else if (m == "max_size_error") {
    try {
      (void)codegen::compile(child_jaxprs(c)[0].jaxpr);
      FAIL() << "expected core::error for XPR_CACHE_MAX_SIZE";
    } catch (const core::error& e) {
      std::cout << "ERROR " << e.what() << std::endl;
    }
  } else if (m == "compile_error") {
    try {
      (void)codegen::compile(child_jaxprs(c)[0].jaxpr);
      FAIL() << "expected compile_error";
    } catch (const compile_error& e) {
      EXPECT_NE(e.log().find("injected failure"), std::string::npos) << e.log();
      std::string what = e.what();
      auto at = what.find("source kept at ");
      ASSERT_NE(at, std::string::npos) << what;
      std::string path = what.substr(at + 15, what.find('\n', at) - at - 15);
      EXPECT_TRUE(fs::exists(path)) << path;
      EXPECT_NE(slurp(path).find("xpr_kernel"), std::string::npos);
    }
  }
  auto s = jit_cache_stats();
  std::cout << "STATS " << s.compiles << " " << s.memory_hits << " " << s.disk_hits << std::endl;
}

TEST(JitCache, SecondProcessCompilesNothing) {
  std::string dir = fresh_dir("cross"), n = nonce();
  auto a = run_child({"XPR_JIT_CHILD=kernels", "XPR_JIT_NONCE=" + n, "XPR_CACHE_DIR=" + dir}, dir);
  ASSERT_EQ(a.status, 0) << a.out << a.err;
  EXPECT_EQ(a.compiles, 2u);
  auto b = run_child({"XPR_JIT_CHILD=kernels", "XPR_JIT_NONCE=" + n, "XPR_CACHE_DIR=" + dir}, dir);
  ASSERT_EQ(b.status, 0) << b.out << b.err;
  EXPECT_EQ(b.compiles, 0u);
  EXPECT_EQ(b.disk_hits, 2u);
  // The cache directory is private to the user.
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 077, 0u);
  fs::remove_all(dir);
}

// A process whose kernels are all on disk runs no compiler, not even to probe its version and
// target: that answer is on disk too, under the compiler's fingerprint, and a changed compiler
// (here: its file rewritten, so its size and modification time differ) is probed again.
TEST(JitCache, SecondProcessRunsNoCompilerAtAll) {
  std::string dir = fresh_dir("noprobe"), n = nonce();
  const std::string cxx = dir + "/counting-cxx", calls = dir + "/calls.txt";
  auto write_wrapper = [&](const std::string& comment) {
    std::ofstream f(cxx);
    f << "#!/bin/sh\n# " << comment << "\necho \"$1\" >> '" << calls << "'\nexec g++ \"$@\"\n";
  };
  auto lines = [&] {
    std::string text = slurp(calls);
    return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  };
  write_wrapper("first");
  fs::permissions(cxx, fs::perms::owner_all);
  const std::vector<std::string> env = {"XPR_JIT_CHILD=kernels", "XPR_JIT_NONCE=" + n,
                                        "XPR_CACHE_DIR=" + dir + "/cache", "XPR_CXX=" + cxx};
  auto a = run_child(env, dir);
  ASSERT_EQ(a.status, 0) << a.out << a.err;
  EXPECT_EQ(a.compiles, 2u);
  EXPECT_EQ(lines(), 4);  // --version, -### and two kernels
  int memos = 0;
  for (const auto& e : fs::directory_iterator(dir + "/cache"))
    if (e.path().filename().string().rfind("compiler-", 0) == 0) {
      ++memos;
      EXPECT_EQ(static_cast<unsigned>(e.status().permissions()) & 077u, 0u);
      EXPECT_NE(slurp(e.path().string()).find("g++"), std::string::npos);  // the version line
    }
  EXPECT_EQ(memos, 1);

  auto b = run_child(env, dir);
  ASSERT_EQ(b.status, 0) << b.out << b.err;
  EXPECT_EQ(b.disk_hits, 2u);
  EXPECT_EQ(lines(), 4) << "the second process ran the compiler";

  write_wrapper("second, a different compiler");
  auto c = run_child(env, dir);
  ASSERT_EQ(c.status, 0) << c.out << c.err;
  EXPECT_EQ(c.compiles, 0u);
  EXPECT_EQ(c.disk_hits, 2u);
  EXPECT_EQ(lines(), 6);  // probed again: --version and -###

  // The kernel index is named by the compiler's fingerprint too: the changed compiler found none
  // (it lowered and read the memo, which was stale: probed above) and wrote its own.
  int indexes = 0;
  for (const auto& e : fs::directory_iterator(dir + "/cache"))
    indexes += e.path().filename().string().rfind("index-", 0) == 0;
  EXPECT_EQ(indexes, 4);

  // A memo cut short (here: its target line lost) is no answer: probed again and rewritten. (The
  // indexes go first: with them the child would not read the memo at all.)
  for (const auto& e : fs::directory_iterator(dir + "/cache"))
    if (e.path().filename().string().rfind("index-", 0) == 0) fs::remove(e.path());
  for (const auto& e : fs::directory_iterator(dir + "/cache"))
    if (e.path().filename().string().rfind("compiler-", 0) == 0) {
      std::string text = slurp(e.path().string());
      text.resize(text.rfind('\n', text.size() - 2) + 1);
      fs::remove(e.path());
      std::ofstream(e.path()) << text;
      fs::permissions(e.path(), fs::perms::owner_read | fs::perms::owner_write);
    }
  auto d = run_child(env, dir);
  ASSERT_EQ(d.status, 0) << d.out << d.err;
  EXPECT_EQ(d.compiles, 0u);
  EXPECT_EQ(lines(), 8);
  auto e = run_child(env, dir);
  ASSERT_EQ(e.status, 0) << e.out << e.err;
  EXPECT_EQ(lines(), 8) << "the rewritten memo was not read back";
  fs::remove_all(dir);
}

// The kernel index lets a new process load a kernel without lowering its jaxpr. It must never
// load what it should not: an index cut short or with a changed byte is ignored (the program is
// lowered and the index rewritten), and an index whose entry is gone compiles the kernel again.
// (A changed compiler finds no index: SecondProcessRunsNoCompilerAtAll.)
TEST(JitCache, IndexLoadsWithoutLoweringAndFallsBackWhenStaleOrCorrupt) {
  std::string dir = fresh_dir("index"), n = nonce();
  const std::vector<std::string> env = {"XPR_JIT_CHILD=kernels", "XPR_JIT_NONCE=" + n,
                                        "XPR_CACHE_DIR=" + dir, "XPR_LOG=1"};
  auto files = [&](const std::string& prefix, const std::string& ext) {
    std::vector<fs::path> v;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind(prefix, 0) == 0 && e.path().extension() == ext)
        v.push_back(e.path());
    std::sort(v.begin(), v.end());
    return v;
  };
  auto indexed = [](const ChildResult& r) {
    int k = 0;
    for (std::size_t at = r.err.find("(indexed)"); at != std::string::npos;
         at = r.err.find("(indexed)", at + 1))
      ++k;
    return k;
  };
  auto a = run_child(env, dir);
  ASSERT_EQ(a.status, 0) << a.out << a.err;
  EXPECT_EQ(a.compiles, 2u);
  const auto index = files("index-", ".txt");
  ASSERT_EQ(index.size(), 2u);
  for (const fs::path& p : index)
    EXPECT_EQ(static_cast<unsigned>(fs::status(p).permissions()) & 077u, 0u);

  auto b = run_child(env, dir);
  ASSERT_EQ(b.status, 0) << b.out << b.err;
  EXPECT_EQ(b.compiles, 0u);
  EXPECT_EQ(b.disk_hits, 2u);
  EXPECT_EQ(indexed(b), 2) << b.err;

  // One index cut short, one with a digit of its plan changed (its hash no longer matches).
  fs::resize_file(index[0], fs::file_size(index[0]) - 20);
  {
    std::string text = slurp(index[1].string());
    const std::size_t at = text.find_last_of("0123456789", text.rfind('\n', text.size() - 2));
    ASSERT_NE(at, std::string::npos);
    text[at] = text[at] == '4' ? '5' : '4';
    fs::remove(index[1]);
    std::ofstream(index[1]) << text;
  }
  auto c = run_child(env, dir);  // the child checks its results against the interpreter's
  ASSERT_EQ(c.status, 0) << c.out << c.err;
  EXPECT_EQ(c.compiles, 0u);
  EXPECT_EQ(c.disk_hits, 2u);
  EXPECT_EQ(indexed(c), 0) << c.err;
  auto d = run_child(env, dir);
  ASSERT_EQ(d.status, 0) << d.out << d.err;
  EXPECT_EQ(indexed(d), 2) << "the indexes were not rewritten: " << d.err;

  // The entries the indexes name are gone: compiled again, not loaded from anywhere else.
  for (const fs::path& p : files("", ".so")) fs::remove(p);
  auto e = run_child(env, dir);
  ASSERT_EQ(e.status, 0) << e.out << e.err;
  EXPECT_EQ(e.compiles, 2u);
  EXPECT_EQ(e.disk_hits, 0u);
  auto f = run_child(env, dir);
  ASSERT_EQ(f.status, 0) << f.out << f.err;
  EXPECT_EQ(f.compiles, 0u);
  EXPECT_EQ(indexed(f), 2) << f.err;
  fs::remove_all(dir);
}

TEST(JitCache, CorruptEntriesAreRemovedAndRebuilt) {
  std::string dir = fresh_dir("corrupt"), n = nonce();
  std::vector<std::string> env = {"XPR_JIT_CHILD=kernels", "XPR_JIT_NONCE=" + n,
                                  "XPR_CACHE_DIR=" + dir};
  ASSERT_EQ(run_child(env, dir).status, 0);
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".so") entries.push_back(e.path());
  ASSERT_EQ(entries.size(), 2u);
  fs::resize_file(entries[0], fs::file_size(entries[0]) / 2);  // truncated
  {
    std::fstream f(entries[1],
                   std::ios::in | std::ios::out | std::ios::binary);  // one byte flipped
    f.seekp(static_cast<std::streamoff>(fs::file_size(entries[1]) / 3));
    f.put('\x5a');
  }
  auto r = run_child(env, dir);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.compiles, 2u);
  EXPECT_EQ(r.disk_hits, 0u);
  auto again = run_child(env, dir);
  EXPECT_EQ(again.compiles, 0u);
  EXPECT_EQ(again.disk_hits, 2u);
  fs::remove_all(dir);
}

TEST(JitCache, NoCompilerFallsBackToTheInterpreterAndSaysSoOnce) {
  // XPR_CXX=false fails the probe; the silent one answers it (its --version runs g++) and then
  // exits 0 without writing the library: not a working compiler either, said with what was
  // expected. Either way every call interprets.
  std::string dir = fresh_dir("nocxx");
  std::string silent = dir + "/silent-cxx";
  {
    std::ofstream f(silent);
    f << "#!/bin/sh\ncase \"$*\" in *--version*|*-###*) exec g++ \"$@\";; esac\nexit 0\n";
  }
  fs::permissions(silent, fs::perms::owner_all);
  for (const std::string& cxx : {std::string("false"), silent}) {
    SCOPED_TRACE(cxx);
    auto r = run_child({"XPR_JIT_CHILD=kernels", "XPR_JIT_NONCE=" + nonce(),
                        "XPR_CACHE_DIR=" + dir + "/cache", "XPR_CXX=" + cxx},
                       dir);
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_EQ(r.compiles, 0u);
    auto first = r.err.find("falls back to the interpreter");
    ASSERT_NE(first, std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("falls back to the interpreter", first + 1), std::string::npos) << r.err;
    if (cxx == silent) {
      EXPECT_NE(r.err.find("exited with status 0 but wrote no kernel"), std::string::npos) << r.err;
    }
  }
  fs::remove_all(dir);
}

TEST(JitCache, RejectedCodeThrowsCompileErrorWithLogAndSource) {
  std::string dir = fresh_dir("badcxx");
  std::string cxx = dir + "/fake-cxx";
  {
    std::ofstream f(cxx);
    f << "#!/bin/sh\ncase \"$*\" in *--version*|*-###*) exec g++ \"$@\";; esac\n"
         "echo 'injected failure' >&2\nexit 1\n";
  }
  fs::permissions(cxx, fs::perms::owner_all);
  auto r = run_child({"XPR_JIT_CHILD=compile_error", "XPR_JIT_NONCE=" + nonce(),
                      "XPR_CACHE_DIR=" + dir + "/cache", "XPR_CXX=" + cxx},
                     dir);
  EXPECT_EQ(r.status, 0) << r.out << r.err;
  fs::remove_all(dir);
}

TEST(JitCache, UntrustedOrUnwritableDirectoryCachesInMemoryOnly) {
  std::string dir = fresh_dir("untrusted");
  std::string shared = dir + "/shared";
  fs::create_directory(shared);
  fs::permissions(shared, fs::perms::all);  // 0777: others could plant a kernel
  auto r = run_child(
      {"XPR_JIT_CHILD=kernels", "XPR_JIT_NONCE=" + nonce(), "XPR_CACHE_DIR=" + shared, "XPR_LOG=1"},
      dir);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_EQ(r.compiles, 2u);
  EXPECT_TRUE(fs::is_empty(shared));
  EXPECT_NE(r.err.find("caching in memory only"), std::string::npos) << r.err;
  std::string ro = dir + "/ro";
  fs::create_directory(ro);
  fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
  auto q = run_child(
      {"XPR_JIT_CHILD=kernels", "XPR_JIT_NONCE=" + nonce(), "XPR_CACHE_DIR=" + ro + "/sub"}, dir);
  EXPECT_EQ(q.status, 0) << q.out << q.err;
  EXPECT_EQ(q.compiles, 2u);
  fs::permissions(ro, fs::perms::owner_all);
  fs::remove_all(dir);
}

TEST(JitCache, EightThreadsFourKernelsOneCompileEach) {
  const double c = std::atof(nonce().c_str());
  Array x = xpr::linspace(-1.0, 1.0, 101);
  std::vector<ClosedJaxpr> js = {
      make_jaxpr([c](const Array& v) { return xpr::sin(v) * c; })(x),
      make_jaxpr([c](const Array& v) { return xpr::sum(v * c); })(x),
      make_jaxpr([c](const Array& v) { return xpr::tanh(v) + c; })(x),
      make_jaxpr([c](const Array& v) { return xpr::maximum(v, c) * v; })(x)};
  std::vector<Array> want;
  for (const ClosedJaxpr& j : js) want.push_back(eval_jaxpr(j, {x})[0]);
  auto before = jit_cache_stats();
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        std::size_t k = static_cast<std::size_t>((i + t) % 4);
        auto got = codegen::execute(js[k], std::vector<Array>{x});
        for (std::int64_t e = 0; e < got[0].size(); ++e)
          if (std::abs(got[0].data<double>()[e] - want[k].data<double>()[e]) >
              1e-12 * 101 * (1 + std::abs(c)))  // a sum of 101 terms of size |c| reassociated
            ++mismatches;
      }
    });
  for (auto& th : threads) th.join();
  auto after = jit_cache_stats();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(after.compiles + after.disk_hits - before.compiles - before.disk_hits, 4u);
  EXPECT_GE(after.memory_hits - before.memory_hits, 796u);
}

TEST(JitCache, TheProcessWideKernelTableIsBounded) {
  // One jitted function called with ever new sizes (examiner K: 20000 sizes kept 1.5 GB): one
  // trace and a few compiles, but a program per shape in the process-wide table, which is emptied
  // when it reaches its bound; every result stays right across the emptying.
  const std::uint64_t compiles_before = jit_cache_stats().compiles;
  auto f = xpr::jit([](const Array& v) { return xpr::sum(v * v); });
  const auto limit = static_cast<std::int64_t>(codegen::max_kernels_in_memory);
  std::uint64_t largest = 0;
  for (std::int64_t n = 1; n <= limit + 20; ++n) {
    const Array y = f(xpr::full({n}, 0.5));
    if (n % 97 == 0 || n > limit - 3) {
      ASSERT_EQ(y.item<double>(), 0.25 * static_cast<double>(n)) << n;
    }
    largest = std::max(largest, jit_cache_stats().kernels_in_memory);
  }
  EXPECT_EQ(largest, codegen::max_kernels_in_memory);
  // Emptied once (earlier tests' programs are in it too): far below the bound now.
  EXPECT_LT(jit_cache_stats().kernels_in_memory, 100u);
  EXPECT_EQ(f.trace_count(), 1u);
  // Sizes share generated sources, so the emptying costs no compile (a few for the first sizes,
  // whose loops the generator writes out).
  EXPECT_LE(jit_cache_stats().compiles - compiles_before, 8u);
  // A size seen before the emptying runs again, right.
  EXPECT_EQ(f(xpr::full({3}, 2.0)).item<double>(), 12.0);
}

// The integrity check of an entry: the object as written passes; every truncation and a changed
// byte anywhere in the object or its trailer fails; a missing file is told apart from a corrupt
// one.
TEST(JitCache, EntryCheckCatchesEveryTruncationAndChangedByte) {
  namespace d = codegen::detail;
  const std::string dir = fresh_dir("entry"), path = dir + "/e.so";
  std::string object(1000, '\0');
  for (std::size_t i = 0; i < object.size(); ++i)
    object[i] = static_cast<char>((i * 37 + 11) % 251);
  const std::string entry = d::with_trailer(object);
  ASSERT_EQ(entry.size(), object.size() + 16);
  auto put = [&](const std::string& bytes) {
    fs::remove(path);
    std::ofstream(path, std::ios::binary) << bytes;
  };
  EXPECT_EQ(d::check_entry(path), d::Entry::missing);
  put(entry);
  EXPECT_EQ(d::check_entry(path), d::Entry::valid);
  int missed = 0;
  for (std::size_t n = 0; n < entry.size(); ++n) {  // every truncation
    put(entry.substr(0, n));
    if (d::check_entry(path) != d::Entry::corrupt) ++missed;
  }
  for (std::size_t i = 0; i < entry.size(); ++i) {  // one byte changed, at every position
    std::string bad = entry;
    bad[i] = static_cast<char>(bad[i] ^ (1 << (i % 8)));
    put(bad);
    if (d::check_entry(path) != d::Entry::corrupt) ++missed;
  }
  put(entry + "x");  // a byte appended
  if (d::check_entry(path) != d::Entry::corrupt) ++missed;
  EXPECT_EQ(missed, 0);
  fs::remove_all(dir);
}

// XPR_CACHE_MAX_SIZE, read as jax_compilation_cache_max_size is (-1: no limit, 0: no disk
// cache), in bytes with an optional K, M or G; anything else is an error that names it.
TEST(JitCache, MaxSizeIsReadFromTheEnvironment) {
  namespace d = codegen::detail;
  const char* old = std::getenv("XPR_CACHE_MAX_SIZE");
  const std::string saved = old ? old : "";
  ::unsetenv("XPR_CACHE_MAX_SIZE");
  EXPECT_EQ(d::cache_max_size(), std::int64_t{1} << 30);
  const std::pair<const char*, std::int64_t> good[] = {
      {"0", 0},
      {"-1", -1},
      {"4096", 4096},
      {"3k", 3 << 10},
      {"5M", 5 << 20},
      {"2G", std::int64_t{2} << 30},
      {"0K", 0},
      {"007", 7},
      {"8589934591G", std::numeric_limits<std::int64_t>::max() - ((std::int64_t{1} << 30) - 1)}};
  for (const auto& [text, bytes] : good) {
    ::setenv("XPR_CACHE_MAX_SIZE", text, 1);
    EXPECT_EQ(d::cache_max_size(), bytes) << text;
  }
  for (const char* text : {"abc", "1T", "-2", "1.5G", "1KB", "K", " 1", "1 ", "8589934592G",
                           "99999999999999999999", "-0"}) {
    ::setenv("XPR_CACHE_MAX_SIZE", text, 1);
    try {
      (void)d::cache_max_size();
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const core::error& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("XPR_CACHE_MAX_SIZE"), std::string::npos) << what;
      EXPECT_NE(what.find(std::string("'") + text + "'"), std::string::npos) << what;
    }
  }
  if (old)
    ::setenv("XPR_CACHE_MAX_SIZE", saved.c_str(), 1);
  else
    ::unsetenv("XPR_CACHE_MAX_SIZE");
}

// Eviction removes the least recently used of the cache's own files (the later of access and
// modification time) until the rest fit, temporary files of dead writers once a day old, and
// nothing else.
TEST(JitCache, EvictionRemovesLeastRecentlyUsedFilesUntilTheRestFit) {
  namespace d = codegen::detail;
  const std::string dir = fresh_dir("evict");
  const std::string h32 = "0123456789abcdef0123456789abcde", h16 = "0123456789abcde";
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  // name, size, access time and modification time in hours before now
  struct F {
    std::string name;
    std::size_t size;
    int atime_h, mtime_h;
  };
  const std::vector<F> files = {
      {h32 + "1.so", 1000, 50, 60},  // used 50 h ago
      {h32 + "2.so", 2000, 90, 10},  // written 10 h ago, not read since
      {h32 + "3.so", 3000, 1, 70},   // read an hour ago
      {"index-" + h32 + "4.txt", 400, 80, 80},
      {"compiler-" + h16 + "5.txt", 500, 30, 40},
      {"notes.txt", 100000, 500, 500},            // not the cache's: never counted nor removed
      {"index-" + h32 + "X.txt", 600, 500, 500},  // not a hex name: not the cache's
      {"." + h32 + "6.1-2-3.tmp", 700, 48, 48},   // a dead writer's
      {"." + h32 + "7.1-2-3.tmp", 800, 1, 1},     // a writer's at work
  };
  auto make = [&] {
    for (const F& f : files) {
      const std::string p = dir + "/" + f.name;
      std::ofstream(p, std::ios::binary) << std::string(f.size, 'x');
      struct timespec t[2] = {{now - f.atime_h * 3600, 0}, {now - f.mtime_h * 3600, 0}};
      ASSERT_EQ(::utimensat(AT_FDCWD, p.c_str(), t, 0), 0);
    }
  };
  auto present = [&] {
    std::vector<std::string> v;
    for (const auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
    std::sort(v.begin(), v.end());
    return v;
  };
  auto without = [&](std::vector<std::string> gone) {
    std::vector<std::string> v;
    for (const F& f : files)
      if (std::find(gone.begin(), gone.end(), f.name) == gone.end()) v.push_back(f.name);
    std::sort(v.begin(), v.end());
    return v;
  };
  const std::string dead = files[7].name;
  make();
  EXPECT_EQ(d::evict(dir, -1).removed, 0u);  // no limit: not even temporary files are looked at
  EXPECT_EQ(present(), without({}));
  // 6900 bytes counted; the order of use: index (80 h), entry 1 (50), memo (30), entry 2 (10),
  // entry 3 (1).
  EXPECT_EQ(d::evict(dir, 6900).removed, 1u);  // fits: only the dead writer's file goes
  EXPECT_EQ(present(), without({dead}));
  make();
  EXPECT_EQ(d::evict(dir, 6500).removed, 2u);  // the index (400) is enough
  EXPECT_EQ(present(), without({dead, files[3].name}));
  make();
  const auto third = d::evict(dir, 5400);  // index, entry 1 and the memo
  EXPECT_EQ(third.removed, 4u);
  EXPECT_EQ(third.held, 5000);
  EXPECT_EQ(present(), without({dead, files[3].name, files[0].name, files[4].name}));
  make();
  EXPECT_EQ(d::evict(dir, 0).removed, 6u);  // everything of the cache's
  EXPECT_EQ(present(), without({dead, files[0].name, files[1].name, files[2].name, files[3].name,
                                files[4].name}));
  EXPECT_EQ(d::evict(dir + "/none", 0).removed, 0u);  // a missing directory: nothing to do
  fs::remove_all(dir);
}

// Across processes: a limit keeps the directory within it while every result stays right; 0
// keeps no disk cache (each process compiles); a malformed value is an error naming the variable.
TEST(JitCache, MaxSizeBoundsTheDirectoryAcrossProcesses) {
  const std::string n = nonce();
  auto cache_bytes = [](const std::string& d) {
    std::uintmax_t total = 0;
    std::size_t count = 0;
    for (const auto& e : fs::directory_iterator(d))
      if (e.is_regular_file() && e.path().filename().string().rfind("child.", 0) != 0) {
        total += e.file_size();
        ++count;
      }
    return std::pair{total, count};
  };
  const std::string free_dir = fresh_dir("maxfree");
  auto a = run_child({"XPR_JIT_CHILD=kernels", "XPR_JIT_NONCE=" + n, "XPR_CACHE_DIR=" + free_dir},
                     free_dir);
  ASSERT_EQ(a.status, 0) << a.out << a.err;
  const auto [unbounded, files] = cache_bytes(free_dir);
  ASSERT_EQ(files, 5u) << "two entries, two index files and the compiler memo";

  const std::string tight = fresh_dir("maxtight");
  const std::string limit = std::to_string(unbounded - 1);
  const std::vector<std::string> env = {"XPR_JIT_CHILD=kernels", "XPR_JIT_NONCE=" + n,
                                        "XPR_CACHE_DIR=" + tight, "XPR_CACHE_MAX_SIZE=" + limit,
                                        "XPR_LOG=1"};
  for (int run = 0; run < 3; ++run) {  // each child checks its results against the interpreter
    auto r = run_child(env, tight);
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    const auto [bytes, count] = cache_bytes(tight);
    EXPECT_LE(bytes, unbounded - 1) << "run " << run;
    EXPECT_LT(count, 5u) << "run " << run;
    if (run == 0) {
      EXPECT_NE(r.err.find("xpr jit: evicted "), std::string::npos) << r.err;
    }
  }

  const std::string none = fresh_dir("maxzero");
  for (int run = 0; run < 2; ++run) {
    auto r = run_child({"XPR_JIT_CHILD=kernels", "XPR_JIT_NONCE=" + n, "XPR_CACHE_DIR=" + none,
                        "XPR_CACHE_MAX_SIZE=0"},
                       none);
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_EQ(r.compiles, 2u) << "run " << run;
    EXPECT_EQ(r.disk_hits, 0u);
    EXPECT_EQ(cache_bytes(none).second, 0u);
  }

  auto bad = run_child({"XPR_JIT_CHILD=max_size_error", "XPR_JIT_NONCE=" + n,
                        "XPR_CACHE_DIR=" + none, "XPR_CACHE_MAX_SIZE=lots"},
                       none);
  ASSERT_EQ(bad.status, 0) << bad.out << bad.err;
  EXPECT_NE(bad.out.find("ERROR XPR_CACHE_MAX_SIZE: expected a size in bytes"), std::string::npos)
      << bad.out;
  EXPECT_NE(bad.out.find("found 'lots'"), std::string::npos) << bad.out;
  for (const std::string& d : {free_dir, tight, none}) fs::remove_all(d);
}

// hash_bytes, which checks entries and names them: a change to any one byte, or to the length,
// changes the hash; the seed does too.
TEST(JitCache, HashOfBytesChangesWithEveryByteAndLength) {
  namespace d = codegen::detail;
  std::string s(67, 'a');
  for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>('a' + i % 26);
  std::vector<std::uint64_t> seen;
  for (std::size_t n = 0; n <= s.size(); ++n) seen.push_back(d::hash_bytes(s.substr(0, n), 1));
  for (std::size_t i = 0; i < s.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string t = s;
      t[i] = static_cast<char>(t[i] ^ (1 << bit));
      seen.push_back(d::hash_bytes(t, 1));
    }
  seen.push_back(d::hash_bytes(s, 2));
  seen.push_back(d::hash_bytes(std::string(8, '\0'), 1));  // zeros are not the empty string
  seen.push_back(d::hash_bytes(std::string(16, '\0'), 1));
  const std::size_t count = seen.size();
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::unique(seen.begin(), seen.end()) - seen.begin(),
            static_cast<std::ptrdiff_t>(count));
}

// read_text reads whole files of any size (the first call reads entries and the memo with it).
TEST(JitCache, ReadTextReadsWholeFiles) {
  namespace d = codegen::detail;
  const std::string dir = fresh_dir("read");
  EXPECT_EQ(d::read_text(dir + "/none"), "");
  for (std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{4095}, std::size_t{4096}, std::size_t{70000}}) {
    std::string want(n, '\0');
    for (std::size_t i = 0; i < n; ++i) want[i] = static_cast<char>(i * 7 % 256);
    const std::string path = dir + "/f" + std::to_string(n);
    std::ofstream(path, std::ios::binary) << want;
    EXPECT_EQ(d::read_text(path), want) << n << " bytes";
  }
  fs::remove_all(dir);
}

// The compiler's fingerprint names the file posix_spawnp would run (the first executable regular
// file of that name on PATH) and holds the CPU's identity as the cpuid instruction reports it, so
// it changes with the compiler found and with the CPU.
TEST(JitCache, FingerprintFollowsPathAndHoldsTheCpuidLeaves) {
  namespace d = codegen::detail;
  const std::string dir = fresh_dir("print"), a = dir + "/a", b = dir + "/b", c = dir + "/c";
  for (const std::string& sub : {a, b, c}) fs::create_directory(sub);
  const std::string name = "xpr-test-cxx";
  std::ofstream(a + "/" + name) << "#!/bin/sh\n";  // not executable: skipped
  std::ofstream(b + "/" + name) << "#!/bin/sh\n# b\n";
  std::ofstream(c + "/" + name) << "#!/bin/sh\n# c, longer\n";
  fs::create_directory(a + "/sub");
  fs::permissions(b + "/" + name, fs::perms::owner_all);
  fs::permissions(c + "/" + name, fs::perms::owner_all);
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", (a + ":" + b + ":" + c).c_str(), 1);
  const std::string via_b = d::compiler_fingerprint({name});
  ::setenv("PATH", (a + ":" + c + ":" + b).c_str(), 1);
  const std::string via_c = d::compiler_fingerprint({name});
  // A directory listed twice is tried once (a login profile run twice repeats PATH entries):
  // the answer is still the first executable file in PATH order.
  ::setenv("PATH", (a + ":" + a + ":" + b + ":" + a + ":" + c).c_str(), 1);
  const std::string repeated_b = d::compiler_fingerprint({name});
  ::setenv("PATH", (a + "::" + c + ":" + a + ":" + b + ":" + c).c_str(), 1);
  const std::string repeated_c = d::compiler_fingerprint({name});
  ::setenv("PATH", a.c_str(), 1);
  const std::string none = d::compiler_fingerprint({name});
  ::setenv("PATH", saved.c_str(), 1);
  EXPECT_EQ(via_b.rfind(b + "/" + name + ":", 0), 0u) << via_b;
  EXPECT_EQ(via_c.rfind(c + "/" + name + ":", 0), 0u) << via_c;
  EXPECT_NE(via_b, via_c);
  EXPECT_EQ(repeated_b, via_b);
  EXPECT_EQ(repeated_c, via_c);
  // XPR_CXX's words, as the compiler command is split.
  EXPECT_EQ(d::split_words("  ccache \tg++  -x\n"),
            (std::vector<std::string>{"ccache", "g++", "-x"}));
  EXPECT_EQ(d::split_words(" \t"), std::vector<std::string>{});
  EXPECT_EQ(none, "") << "a compiler that is not found has no fingerprint (it is probed)";
  EXPECT_EQ(d::compiler_fingerprint({b + "/" + name}), via_b);  // a path is taken as it is
  EXPECT_EQ(d::compiler_fingerprint({a + "/sub"}), "");         // a directory is no compiler
#if defined(__x86_64__)
  // The leaves -march=native decides by, read here by the instruction itself.
  auto regs = [](unsigned leaf, bool ebx) {
    unsigned r[4] = {0, 0, 0, 0};
    __asm__("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(0));
    return std::to_string(r[0]) + "," + std::to_string(ebx ? r[1] : 0) + "," +
           std::to_string(r[2]) + "," + std::to_string(r[3]) + ";";
  };
  EXPECT_NE(via_b.find(regs(1, false)), std::string::npos) << via_b;  // family, model, features
  EXPECT_NE(via_b.find(regs(7, true)), std::string::npos) << via_b;   // AVX2, AVX-512, ...
  EXPECT_NE(via_b.find(regs(0x80000001u, true)), std::string::npos) << via_b;
  // The vendor: leaf 0 ("GenuineIntel", "AuthenticAMD"), or libgcc's number for it (1, 2) when
  // the fingerprint reads it from libgcc_s, which a C++ program like this one has loaded.
  unsigned v[4] = {0, 0, 0, 0};
  __asm__("cpuid" : "=a"(v[0]), "=b"(v[1]), "=c"(v[2]), "=d"(v[3]) : "a"(0), "c"(0));
  const bool intel = v[1] == 0x756e6547u && v[3] == 0x49656e69u && v[2] == 0x6c65746eu;
  const bool amd = v[1] == 0x68747541u && v[3] == 0x69746e65u && v[2] == 0x444d4163u;
  const std::string cpu = via_b.substr(via_b.find(' ') + 1);
  if (intel || amd) {
    EXPECT_TRUE(cpu.rfind(intel ? "1," : "2,", 0) == 0 || cpu.rfind(regs(0, true), 0) == 0)
        << via_b;
  }
#endif
  fs::remove_all(dir);
}

}  // namespace test_jit_cache
