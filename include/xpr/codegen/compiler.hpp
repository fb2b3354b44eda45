// SPDX-License-Identifier: MIT
// The compiler driver of jit: which compiler (XPR_CXX, default g++), with which flags, for which
// target, and running it on a source file without a shell. The flags were chosen by measurement
// (issue 14, docs/jit.md): -O3 vectorizes the fused loops and, with -fno-math-errno and the
// simd-attributed libm declarations of emit.hpp, calls glibc's libmvec; -fwrapv gives signed
// integers XLA's wrap-around; -ffp-contract=off keeps a*b+c rounded as the interpreter rounds it;
// never -ffast-math (it links crtfastmath.o, which sets flush-to-zero for the whole process).
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <mutex>
#include <spawn.h>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include "xpr/core/config.hpp"

extern char** environ;

namespace xpr::codegen {

namespace detail {

/// Runs `argv` (no shell: nothing in it is interpreted), its stdout and stderr into `log_path`.
/// Returns the exit status, or -1 when it could not be started.
int run_process(const std::vector<std::string>& argv, const std::string& log_path);

/// The whole file (empty if it cannot be read). POSIX read(): istreambuf_iterator trips GCC 12's
/// -Wnull-dereference inside libstdc++.
std::string read_text(const std::string& path);

inline std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string(fallback);
}

bool log_enabled();

}  // namespace detail

/// The compiler jit runs, probed once per process.
struct CompilerInfo {
  std::vector<std::string> command;  // XPR_CXX split on spaces ("ccache g++" works)
  std::string version;               // first line of `--version`
  std::string target;                // the flags -march=native resolves to (cc1plus's -m...)
  bool ok = false;
};

/// The flags every kernel is compiled with, before the source and output paths. `-lm` comes after
/// the source (see compile_command), or libmvec is not recorded as needed and dlopen fails.
std::vector<std::string> compile_flags();

const CompilerInfo& compiler_info();

/// The full command compiling `src` into the shared object `out`.
std::vector<std::string> compile_command(const std::string& src, const std::string& out);

}  // namespace xpr::codegen

#if XPR_DEFINITIONS

namespace xpr::codegen::detail {

XPR_FUNC int run_process(const std::vector<std::string>& argv, const std::string& log_path) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (!WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

XPR_FUNC std::string read_text(const std::string& path) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[65536];
  for (;;) {
    ssize_t r = ::read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    out.append(buf, static_cast<std::size_t>(r));
  }
  ::close(fd);
  return out;
}

XPR_FUNC bool log_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("XPR_LOG");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}
}  // namespace xpr::codegen::detail

namespace xpr::codegen {

XPR_FUNC std::vector<std::string> compile_flags() {
  return {"-std=c++20",          "-O3",      "-march=native", "-fno-math-errno", "-fwrapv",
          "-ffp-contract=off",   "-fno-plt", "-fPIC",         "-shared",         "-nostdlib",
          "-fvisibility=hidden", "-w"};
}

XPR_FUNC const CompilerInfo& compiler_info() {
  static const CompilerInfo info = [] {
    CompilerInfo ci;
    std::istringstream words(detail::env_or("XPR_CXX", "g++"));
    for (std::string w; words >> w;) ci.command.push_back(w);
    if (ci.command.empty()) return ci;
    char tmpl[] = "/tmp/xpr-probe-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) return ci;
    close(fd);
    std::string log = tmpl;
    std::vector<std::string> v = ci.command;
    v.push_back("--version");
    if (detail::run_process(v, log) != 0) {
      std::remove(log.c_str());
      return ci;
    }
    std::string text = detail::read_text(log);
    ci.version = text.substr(0, text.find('\n'));
    // `-###` prints the cc1plus command line with -march=native resolved to the CPU's features,
    // so a cache shared between machines never loads AVX-512 code on a CPU without it.
    std::vector<std::string> t = ci.command;
    for (const char* a :
         {"-###", "-march=native", "-x", "c++", "-c", "/dev/null", "-o", "/dev/null"})
      t.push_back(a);
    if (detail::run_process(t, log) == 0) {
      std::istringstream lines(detail::read_text(log));
      for (std::string line; std::getline(lines, line);)
        if (line.find("cc1plus") != std::string::npos) {
          std::istringstream toks(line);
          for (std::string tok; toks >> tok;)
            if (tok.rfind("\"-m", 0) == 0 || tok.rfind("-m", 0) == 0) ci.target += tok + " ";
        }
    }
    std::remove(log.c_str());
    ci.ok = !ci.version.empty();
    return ci;
  }();
  return info;
}

XPR_FUNC std::vector<std::string> compile_command(const std::string& src, const std::string& out) {
  std::vector<std::string> cmd = compiler_info().command;
  for (const std::string& f : compile_flags()) cmd.push_back(f);
  cmd.push_back(src);
  cmd.push_back("-o");
  cmd.push_back(out);
  cmd.push_back("-lm");
  return cmd;
}

}  // namespace xpr::codegen
#endif  // XPR_DEFINITIONS
