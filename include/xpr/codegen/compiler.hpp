// SPDX-License-Identifier: MIT
// The compiler driver of jit: which compiler (XPR_CXX, default g++), with which flags, for which
// target, and running it on a source file without a shell. The flags were chosen by measurement
// (issue 14, docs/jit.md): -O3 vectorizes the fused loops and, with -fno-math-errno and the
// simd-attributed libm declarations of emit.hpp, calls glibc's libmvec; -fwrapv gives signed
// integers XLA's wrap-around; -ffp-contract=off keeps a*b+c rounded as the interpreter rounds it;
// never -ffast-math (it links crtfastmath.o, which sets flush-to-zero for the whole process).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"

namespace xpr::codegen {

struct CompilerInfo;

namespace detail {

/// A 64-bit hash of `s`, 8 bytes per step (FNV-1a, a byte at a time, took 20 us for a 14 KB
/// kernel checked on every first call); it names cache entries and compiler memos and checks
/// entries. Each step maps the state one-to-one for a given word and the length is mixed in, so
/// a change to one 8-byte word, or to the length, always changes the hash.
inline std::uint64_t hash_bytes(std::string_view s, std::uint64_t seed) {
  constexpr std::uint64_t k = 0xff51afd7ed558ccdull;  // odd: multiplying by it is one-to-one
  std::uint64_t h = seed ^ (s.size() * 0x9e3779b97f4a7c15ull);
  const char* p = s.data();
  std::size_t n = s.size();
  for (; n >= 8; p += 8, n -= 8) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    h = (h ^ w) * k;
    h ^= h >> 32;
  }
  std::uint64_t w = 0;
  if (n) std::memcpy(&w, p, n);
  h = (h ^ w) * k;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

std::string hex16(std::uint64_t v);

/// Runs `argv` (no shell: nothing in it is interpreted), its stdout and stderr into `log_path`.
/// Returns the exit status, or -1 when it could not be started.
int run_process(const std::vector<std::string>& argv, const std::string& log_path);

/// The whole file (empty if it cannot be read). POSIX read(): istreambuf_iterator trips GCC 12's
/// -Wnull-dereference inside libstdc++.
std::string read_text(const std::string& path);

/// Writes `bytes` to a new file `path` (mode 0600; fails if it exists); false on any error.
bool write_file(const std::string& path, const std::string& bytes);

inline std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : std::string(fallback);
}

bool log_enabled();

/// `s` split on spaces and tabs (XPR_CXX's words: "ccache g++" works).
std::vector<std::string> split_words(std::string_view s);

/// A directory is trusted when it is a real directory owned by this user that nobody else may
/// write (a kernel loaded from it runs in this process).
bool trusted_dir(const std::string& path);

/// The disk cache directory: $XPR_CACHE_DIR, else $XDG_CACHE_HOME/xpr, else ~/.cache/xpr, created
/// with mode 0700; empty (memory-only cache) when it cannot be created, is not writable, or is not
/// trusted.
const std::string& cache_dir();

/// XPR_CACHE_MAX_SIZE: the most bytes the disk cache may hold (a number, optionally followed by
/// K, M or G for KiB, MiB or GiB; -1 for no limit; 0 keeps no disk cache at all). 1 GiB when it
/// is unset. Throws core::error naming the variable when it is not of that form.
std::int64_t cache_max_size();

// Eviction (XPR_CACHE_MAX_SIZE, `cache_max_size`): the directory's entries, index files and
// compiler memos are counted, and the least recently used are removed until the rest fit.
// "Used" is the later of the access and modification times: reading a file (each load reads its
// entry whole) moves its access time on Linux's default `relatime` mounts at most once a day, so
// this is least-recently-used at a day's granularity at no cost on the load path; under `noatime`
// it is oldest-written first. Removing a file a process has loaded is harmless (its mapping
// stays); one removed between another process's check and its dlopen is compiled again there.
// Temporary files of writers that died are removed once a day old.
struct Eviction {
  std::size_t removed = 0;  // files
  std::int64_t held = 0;    // bytes of the cache's files left
};
Eviction evict(const std::string& dir, std::int64_t limit);

/// Called after this process wrote `bytes` into the cache directory. Reading the directory costs
/// about 2 us per file (0.1 s for 60000 kernels), so it is read when this process has written
/// more than the room the last reading left, and otherwise only on a slow path (`may_read`: a
/// compile, a compiler probe), never first by an index file's write (the first call of a rebuilt
/// program whose kernels are on disk). The directory is within the limit when a process that
/// compiled has returned; a process that only wrote index files may leave it above by those.
void cache_wrote(std::int64_t bytes, bool may_read);

/// What a compiler probe's answer depends on: each word of the command resolved on PATH, with its
/// device, inode, size and modification time (an upgraded or re-pointed compiler changes them),
/// and the CPU that -march=native resolves against (cpuid). Empty when any of it is unknown: the
/// probe then runs.
std::string compiler_fingerprint(const std::vector<std::string>& command);

/// XPR_CXX split into words (default `g++`), and `compiler_fingerprint` of it: each computed once
/// per process (the compiler memo and the kernel index are both named by the fingerprint).
const std::vector<std::string>& compiler_command();
const std::string& compiler_print();

/// Runs the compiler twice (`--version`; `-###` to resolve -march=native): about 3.5 ms.
CompilerInfo probe_compiler(std::vector<std::string> command);

}  // namespace detail

/// The compiler jit runs. Probed once per machine and compiler: the answer is kept in the cache
/// directory under the compiler's fingerprint (`detail::compiler_fingerprint`), so a new process
/// whose kernels are all on disk runs no compiler at all.
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
// What the definitions use: processes, files, the CPU (a unit compiled with XPR_COMPILED_LIB
// parses none of it).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <mutex>
#include <optional>
#include <spawn.h>
#include <sstream>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#if defined(__GLIBC__) && __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>  // glibc >= 2.33: the cpuid leaves read at startup
#endif
#endif

extern char** environ;

namespace xpr::codegen::detail {

XPR_FUNC std::string hex16(std::uint64_t v) {
  // By hand, not snprintf: printf's code, run for the first time, faulted four pages on every
  // process's first call (this names the compiler memo and the cache entry).
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4)
    s[static_cast<std::size_t>(i)] = "0123456789abcdef"[v & 15];
  return s;
}

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
  // Read straight into a string of the file's size (a first call reads a cache entry and the
  // compiler memo this way: a 64 KB stack buffer cost a page fault per 4 KB of stack touched).
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  std::size_t want = regular && st.st_size > 0 ? static_cast<std::size_t>(st.st_size) + 1 : 4096;
  std::size_t have = 0;
  for (;;) {
    out.resize(have + want);
    ssize_t r = ::read(fd, out.data() + have, want);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    have += static_cast<std::size_t>(r);
    if (regular && static_cast<std::size_t>(r) < want) break;  // short only at its end
    want = 4096;
  }
  out.resize(have);
  ::close(fd);
  return out;
}

XPR_FUNC bool trusted_dir(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return false;
  return S_ISDIR(st.st_mode) && st.st_uid == geteuid() && (st.st_mode & 022) == 0;
}

XPR_FUNC std::int64_t cache_max_size() {
  // JAX's jax_compilation_cache_max_size has the same -1 and 0; its default is no limit, but
  // JAX's disk cache is off until a directory is chosen and this one is on by default, and each
  // rebuild of a program writes new index files: a bound keeps an old cache from filling a disk.
  const char* e = std::getenv("XPR_CACHE_MAX_SIZE");
  if (!e || !*e) return std::int64_t{1} << 30;
  const std::string_view v(e);
  if (v == "-1") return -1;
  std::int64_t n = 0;
  std::size_t i = 0;
  for (; i < v.size() && v[i] >= '0' && v[i] <= '9'; ++i) {
    if (n > (INT64_MAX - 9) / 10) {
      i = 0;  // too large: reported below as not a size
      break;
    }
    n = n * 10 + (v[i] - '0');
  }
  int shift = 0;
  if (i > 0 && i + 1 == v.size()) {
    switch (v[i] | 0x20) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      default:
        i = 0;
    }
    if (i > 0) ++i;
  }
  if (i == 0 || i != v.size() || n > (INT64_MAX >> shift))
    throw core::error(
        "XPR_CACHE_MAX_SIZE: expected a size in bytes (digits, optionally followed "
        "by K, M or G), or -1 for no limit; found '" +
        std::string(v.substr(0, 64)) + "'");
  return n << shift;
}

XPR_FUNC Eviction evict(const std::string& dir, std::int64_t limit) {
  Eviction out;
  if (limit < 0 || dir.empty()) return out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  auto hex = [](std::string_view s) {
    return s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
  };
  auto ends = [](std::string_view s, std::string_view tail) {
    return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
  };
  struct File {
    std::string name;
    std::int64_t size;
    struct timespec used;
  };
  std::vector<File> files;
  std::int64_t& total = out.held;
  std::size_t& removed = out.removed;
  const auto now = std::chrono::system_clock::now();
  while (const dirent* e = ::readdir(d)) {
    const std::string_view n = e->d_name;
    const bool entry = n.size() == 35 && ends(n, ".so") && hex(n.substr(0, 32));
    const bool index =
        n.size() == 42 && n.substr(0, 6) == "index-" && ends(n, ".txt") && hex(n.substr(6, 32));
    const bool memo =
        n.size() == 29 && n.substr(0, 9) == "compiler-" && ends(n, ".txt") && hex(n.substr(9, 16));
    // Written under a temporary name, then renamed: `.<key>.<suffix>.tmp` and `.so`, and the
    // index's and memo's `<name>.<suffix>.tmp`.
    const bool temp =
        (n.size() > 1 && n[0] == '.' && (ends(n, ".tmp") || ends(n, ".so"))) ||
        ((n.substr(0, 6) == "index-" || n.substr(0, 9) == "compiler-") && ends(n, ".tmp"));
    if (!entry && !index && !memo && !temp) continue;  // not ours (or a kept failed build)
    struct stat st {};
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (temp) {
      const auto written = std::chrono::system_clock::from_time_t(st.st_mtim.tv_sec);
      if (now - written > std::chrono::hours(24) && ::unlinkat(::dirfd(d), e->d_name, 0) == 0)
        ++removed;
      continue;
    }
    const struct timespec used =
        st.st_atim.tv_sec > st.st_mtim.tv_sec ||
                (st.st_atim.tv_sec == st.st_mtim.tv_sec && st.st_atim.tv_nsec > st.st_mtim.tv_nsec)
            ? st.st_atim
            : st.st_mtim;
    files.push_back({std::string(n), static_cast<std::int64_t>(st.st_size), used});
    total += static_cast<std::int64_t>(st.st_size);
  }
  if (total > limit) {
    std::sort(files.begin(), files.end(), [](const File& a, const File& b) {
      return a.used.tv_sec != b.used.tv_sec     ? a.used.tv_sec < b.used.tv_sec
             : a.used.tv_nsec != b.used.tv_nsec ? a.used.tv_nsec < b.used.tv_nsec
                                                : a.name < b.name;
    });
    for (const File& f : files) {
      if (total <= limit) break;
      // Gone already (another process evicting) counts as removed from the total too.
      if (::unlinkat(::dirfd(d), f.name.c_str(), 0) == 0) ++removed;
      total -= f.size;
    }
    if (log_enabled())
      std::cerr << "xpr jit: evicted " << removed << " files; the cache holds " << total
                << " of at most " << limit << " bytes\n";
  }
  ::closedir(d);
  return out;
}

XPR_FUNC void cache_wrote(std::int64_t bytes, bool may_read) {
  const std::int64_t limit = cache_max_size();
  const std::string& dir = cache_dir();
  if (limit < 0 || dir.empty()) return;
  static std::mutex mu;
  static std::optional<std::int64_t> room;  // none until this process first reads the directory
  std::lock_guard<std::mutex> lock(mu);
  if (room) *room -= bytes;
  if (room ? *room >= 0 : !may_read) return;
  room = limit - evict(dir, limit).held;
}

XPR_FUNC const std::string& cache_dir() {
  static const std::string dir = [] {
    if (cache_max_size() == 0) return std::string();  // no disk cache: as JAX's max size 0
    std::string d;
    if (const char* e = std::getenv("XPR_CACHE_DIR"); e && *e) {
      d = e;
    } else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) {
      d = std::string(x) + "/xpr";
    } else if (const char* h = std::getenv("HOME"); h && *h) {
      d = std::string(h) + "/.cache/xpr";
    } else {
      return std::string();
    }
    bool trusted = trusted_dir(d);  // usually it exists: two system calls, not five
    if (!trusted) {
      std::error_code ec;
      std::filesystem::path p(d);
      if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
      ::mkdir(d.c_str(), 0700);
      trusted = trusted_dir(d);
    }
    if (!trusted || ::access(d.c_str(), W_OK) != 0) {
      if (log_enabled())
        std::cerr << "xpr jit: cache directory " << d
                  << " is not a private writable directory; caching in memory only\n";
      return std::string();
    }
    return d;
  }();
  return dir;
}

XPR_FUNC std::string compiler_fingerprint(const std::vector<std::string>& command) {
  std::string print;
  const std::string path_env = env_or("PATH", "/usr/bin:/bin");
  for (const std::string& word : command) {
    // As posix_spawnp finds it: the first PATH entry holding an executable regular file. One
    // stat() per directory tried (no access() then stat(): each system call costs a few
    // microseconds in a virtual machine, and this runs on every process's first call).
    struct stat st {};
    auto executable = [&st](const std::string& p) {
      return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
             (st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) != 0;
    };
    std::string path;
    if (word.find('/') != std::string::npos) {
      if (executable(word)) path = word;
    } else {
      // A directory listed twice in PATH (a login shell's profile run twice) answers the same
      // the second time: stat it once.
      std::vector<std::string_view> tried;
      const std::string_view all = path_env;
      for (std::size_t b = 0; b <= all.size();) {
        std::size_t e = all.find(':', b);
        if (e == std::string_view::npos) e = all.size();
        const std::string_view d = e == b ? std::string_view(".") : all.substr(b, e - b);
        b = e + 1;
        if (std::find(tried.begin(), tried.end(), d) != tried.end()) continue;
        tried.push_back(d);
        std::string candidate = std::string(d) + "/" + word;
        if (executable(candidate)) {
          path = std::move(candidate);
          break;
        }
      }
    }
    if (path.empty()) return {};
    print += path + ":" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" +
             std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
             std::to_string(st.st_mtim.tv_nsec) + " ";
  }
#if defined(__x86_64__) || defined(__i386__)
  // What -march=native reads: the vendor, family/model and feature leaves, and which register
  // state the OS saves (XCR0, without which AVX is not used). In a virtual machine each cpuid
  // traps to the hypervisor (about 6 us here); glibc and libgcc ran them at startup and keep the
  // answers, so they are read from there where they exist.
  auto regs = [&print](unsigned a, unsigned b, unsigned c, unsigned d) {
    print += std::to_string(a) + "," + std::to_string(b) + "," + std::to_string(c) + "," +
             std::to_string(d) + ";";
  };
#if defined(CPU_FEATURE_ACTIVE)  // <sys/platform/x86.h> was included
  // The vendor from libgcc_s's __cpu_model, filled by that library's constructor (looked up by
  // name: __builtin_cpu_is would link libgcc.a's copy, whose constructor runs a dozen cpuids at
  // every program's start), else from cpuid leaf 0. Then glibc's raw leaves by index
  // (CPUID_INDEX_1 = 0, 7, 0x80000001, 0xD.1, ...: the list grows with glibc, and an index past
  // its end reads as zeros); leaf 1 without EBX: it holds the APIC id of the core that ran the
  // startup code.
  if (const auto* model =
          static_cast<const unsigned*>(::dlvsym(RTLD_DEFAULT, "__cpu_model", "GCC_4.8.0"))) {
    regs(model[0], model[1], model[2], 0);  // vendor, type, subtype
  } else {
    unsigned a = 0, b = 0, c = 0, d = 0;
    __cpuid_count(0, 0, a, b, c, d);
    regs(a, b, c, d);
  }
  for (unsigned index = 0; index < 16; ++index) {
    const unsigned* r = __x86_get_cpuid_feature_leaf(index)->cpuid_array;
    regs(r[0], index == CPUID_INDEX_1 ? 0 : r[1], r[2], r[3]);
  }
  const bool osxsave = (__x86_get_cpuid_feature_leaf(CPUID_INDEX_1)->cpuid_array[2] >> 27) & 1u;
#else
  unsigned a = 0, b = 0, c = 0, d = 0;
  auto leaf = [&](unsigned l, bool with_ebx) {
    a = b = c = d = 0;
    __cpuid_count(l, 0, a, b, c, d);
    regs(a, with_ebx ? b : 0, c, d);
  };
  leaf(0, true);  // EAX: the highest leaf
  const unsigned max_leaf = a;
  bool osxsave = false;
  if (max_leaf >= 1) {
    leaf(1, false);  // not EBX: it holds the APIC id of the core we run on
    osxsave = (c >> 27) & 1u;
  }
  if (max_leaf >= 7) leaf(7, true);
  leaf(0x80000000u, true);
  if (a >= 0x80000001u) leaf(0x80000001u, true);
#endif
  if (osxsave) {  // xgetbv does not trap
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    print += "xcr0=" + std::to_string(lo) + "," + std::to_string(hi);
  }
  return print;
#else
  return {};  // no cheap CPU identity here: probe in every process
#endif
}

XPR_FUNC CompilerInfo probe_compiler(std::vector<std::string> command) {
  CompilerInfo ci;
  ci.command = std::move(command);
  if (ci.command.empty()) return ci;
  char tmpl[] = "/tmp/xpr-probe-XXXXXX";
  int fd = mkstemp(tmpl);
  if (fd < 0) return ci;
  close(fd);
  std::string log = tmpl;
  std::vector<std::string> v = ci.command;
  v.push_back("--version");
  if (run_process(v, log) != 0) {
    std::remove(log.c_str());
    return ci;
  }
  std::string text = read_text(log);
  ci.version = text.substr(0, text.find('\n'));
  // `-###` prints the cc1plus command line with -march=native resolved to the CPU's features,
  // so a cache shared between machines never loads AVX-512 code on a CPU without it.
  std::vector<std::string> t = ci.command;
  for (const char* a : {"-###", "-march=native", "-x", "c++", "-c", "/dev/null", "-o", "/dev/null"})
    t.push_back(a);
  if (run_process(t, log) == 0) {
    std::istringstream lines(read_text(log));
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
}

XPR_FUNC bool write_file(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) return false;
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w <= 0) {
      ::close(fd);
      return false;
    }
    done += static_cast<std::size_t>(w);
  }
  return ::close(fd) == 0;
}

XPR_FUNC std::vector<std::string> split_words(std::string_view s) {
  std::vector<std::string> words;
  for (std::size_t b = s.find_first_not_of(" \t\n"); b != std::string_view::npos;) {
    const std::size_t e = std::min(s.find_first_of(" \t\n", b), s.size());
    words.emplace_back(s.substr(b, e - b));
    b = s.find_first_not_of(" \t\n", e);
  }
  return words;
}

XPR_FUNC const std::vector<std::string>& compiler_command() {
  static const std::vector<std::string> command = split_words(env_or("XPR_CXX", "g++"));
  return command;
}

XPR_FUNC const std::string& compiler_print() {
  static const std::string print = compiler_fingerprint(compiler_command());
  return print;
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
  std::vector<std::string> flags = {"-std=c++20", "-O3", "-march=native"};
#if defined(__x86_64__) || defined(__i386__)
  // GCC tunes Intel's AVX-512 CPUs for 256-bit vectors, so a loop calls libmvec's 4-wide AVX2
  // sin/exp/tanh; with 512-bit loops it calls the 8-wide AVX-512 ones (sin(x)*2-x on 1M in 0.66-
  // 0.72x the time, the 10-op chain in 0.55x: docs/benchmarks.md). No effect without AVX-512.
  flags.push_back("-mprefer-vector-width=512");
#endif
  for (const char* f : {"-fno-math-errno", "-fwrapv", "-ffp-contract=off", "-fno-plt", "-fPIC",
                        "-shared", "-nostdlib", "-fvisibility=hidden", "-w"})
    flags.push_back(f);
  // Two load segments instead of four (ld's default on x86 pads code into pages of its own): a
  // 5.8 KB object instead of 14 KB, and dlopen maps, faults and checks less on every first call
  // (19 us instead of 26 here).
  flags.push_back("-Wl,-z,noseparate-code");
  return flags;
}

XPR_FUNC const CompilerInfo& compiler_info() {
  static const CompilerInfo info = [] {
    // No istringstream here or below: this runs on every process's first call, and stream and
    // locale code run for the first time cost page faults.
    std::vector<std::string> command = detail::compiler_command();
    const std::string& print = detail::compiler_print();
    const std::string& dir = detail::cache_dir();
    const std::string memo =
        print.empty() || dir.empty()
            ? std::string()
            : dir + "/compiler-" + detail::hex16(detail::hash_bytes(print, 3)) + ".txt";
    // The memo: a header line, the fingerprint, the version, the target. Any mismatch re-probes.
    const std::string header = "xpr compiler probe 1\n";
    if (!memo.empty()) {
      const std::string text = detail::read_text(memo);
      std::string_view rest = text;
      auto line = [&rest](std::string_view& out) {  // std::getline's answer, without a stream
        if (rest.empty()) return false;
        const std::size_t e = rest.find('\n');
        out = rest.substr(0, e);
        rest = e == std::string_view::npos ? std::string_view() : rest.substr(e + 1);
        return true;
      };
      std::string_view h, p, version, target;
      if (line(h) && header == std::string(h) + "\n" && line(p) && p == print && line(version) &&
          line(target) && !version.empty()) {
        CompilerInfo ci;
        ci.command = std::move(command);
        ci.version = std::string(version);
        ci.target = std::string(target);
        ci.ok = true;
        return ci;
      }
    }
    CompilerInfo ci = detail::probe_compiler(std::move(command));
    if (ci.ok && !memo.empty()) {
      // Published with rename(), so a concurrent reader sees the old file or the whole new one.
      const std::string tmp = memo + "." + std::to_string(::getpid()) + ".tmp";
      const std::string text = header + print + "\n" + ci.version + "\n" + ci.target + "\n";
      if (!detail::write_file(tmp, text) || ::rename(tmp.c_str(), memo.c_str()) != 0)
        std::remove(tmp.c_str());
      detail::cache_wrote(static_cast<std::int64_t>(text.size()), true);
    }
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
