// SPDX-License-Identifier: MIT
// The kernel cache of jit: compiled shared objects on disk (one file per hash of source, compiler
// version, flags and resolved target; published with rename(), checked before loading) and loaded
// kernels in memory (each compiled or loaded once per process, however many threads ask).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>
#include <unordered_map>

#include "xpr/codegen/compiler.hpp"
#include "xpr/codegen/entry.hpp"
#include "xpr/core/config.hpp"
#include "xpr/core/error.hpp"

namespace xpr::codegen {

/// The kernel a shared object exports.
using KernelFn = void (*)(void* const*, const long long*, const void*);

/// A loaded shared object (never unloaded: kernels may run on other threads).
struct Library {
  void* handle = nullptr;
  KernelFn fn = nullptr;
  std::string key;
};

namespace detail {

struct CacheCounters {
  std::atomic<std::uint64_t> compiles{0}, memory_hits{0}, disk_hits{0};
  std::atomic<std::uint64_t> kernels_in_memory{0};  // the size of `compile`'s table
};
inline CacheCounters& counters() {
  static CacheCounters c;
  return c;
}

// A cache entry is the shared object followed by a trailer: 8 bytes of hash of the object
// (`hash_bytes`) and 8 bytes of magic. A truncated or corrupted file fails the check and is
// rebuilt. (The ELF loader reads only what the headers point to, so the trailer does not disturb
// dlopen.) The whole object is hashed on every load: a size, or a hash of only the headers, would
// pass an entry with a flipped byte in its code, and hashing 14 KB takes about 2 us.
inline constexpr char entry_magic[9] = "XPRSO002";
inline constexpr std::uint64_t entry_seed = 0x5850525f656e7472ull;

std::string with_trailer(std::string so);

enum class Entry { missing, corrupt, valid };

/// Whether the cache entry at `path` exists and passes its trailer's check (one open and read: no
/// separate existence check).
Entry check_entry(const std::string& path);

std::string random_suffix();

std::shared_ptr<Library> open_library(const std::string& path, const std::string& key);

/// Why this thread's last `open_library` returned null (`dlerror`'s text, or which symbol lacked).
std::string& last_load_error();

inline void log_line(const std::string& s) {
  if (log_enabled()) std::cerr << "xpr jit: " << s << "\n";
}

std::string join(const std::vector<std::string>& v);

/// Compiles `source` in a fresh private temporary directory under `parent`; returns the shared
/// object's bytes. Throws compile_error (keeping the source) when the compiler rejects it.
std::string compile_to_bytes(const std::string& source, const std::string& parent,
                             const std::string& key);

/// The loaded library for `source`, from memory, disk or the compiler.
std::shared_ptr<const Library> load_library(const std::string& source);

/// One loaded library per entry key in this process (compiled or loaded once however many
/// threads ask). `fresh`: the slot was made by this call; with `create` false a missing slot is
/// not made (null is returned).
struct LibrarySlot {
  std::once_flag once;
  std::shared_ptr<const Library> lib;
};
std::shared_ptr<LibrarySlot> library_slot(const std::string& key, bool& fresh, bool create = true);

/// The library of the disk cache's entry `key` when it is loaded already or is on disk and passes
/// its check; null otherwise (nothing is removed or compiled: the caller lowers and takes
/// `load_library`'s path, which rebuilds a corrupt entry).
std::shared_ptr<const Library> load_entry(const std::string& key);

// The kernel index: a file per traced program (`index-<hash>.txt` beside the entries) that names
// the entry its lowering compiled to and holds the plan the host needs to call it, so that a new
// process's first call loads the kernel without lowering the jaxpr or reading the compiler memo.
// Its name and its first lines hold the index identity: the compiler's fingerprint (the same
// one the memo is checked against: each word of XPR_CXX resolved on PATH with its inode, size
// and modification time, and the CPU), the flags, and the identity of the object file holding
// this code (a rebuilt program may lower differently); then the program's text. A file whose
// lines differ from those, or whose trailing hash fails, is ignored and rewritten.

/// The identity above; empty when any part of it is unknown (no index is used then).
const std::string& index_identity();

/// The body stored for `program` (the index's text of a jaxpr), or empty.
std::string read_index(std::string_view program);

/// Stores `body` for `program` (written under a temporary name, published with rename()).
void write_index(std::string_view program, std::string_view body);

}  // namespace detail

}  // namespace xpr::codegen

#if XPR_DEFINITIONS

namespace xpr::codegen::detail {

XPR_FUNC std::string with_trailer(std::string so) {
  std::uint64_t h = hash_bytes(so, entry_seed);
  char b[8];
  std::memcpy(b, &h, 8);
  so.append(b, 8);
  so.append(entry_magic, 8);
  return so;
}

XPR_FUNC Entry check_entry(const std::string& path) {
  errno = 0;
  std::string bytes = read_text(path);
  if (bytes.empty() && errno == ENOENT) return Entry::missing;
  if (bytes.size() < 16 + 64) return Entry::corrupt;
  if (bytes.compare(bytes.size() - 8, 8, entry_magic, 8) != 0) return Entry::corrupt;
  std::uint64_t h;
  std::memcpy(&h, bytes.data() + bytes.size() - 16, 8);
  return hash_bytes(std::string_view(bytes).substr(0, bytes.size() - 16), entry_seed) == h
             ? Entry::valid
             : Entry::corrupt;
}

XPR_FUNC std::string random_suffix() {
  static std::atomic<unsigned> counter{0};
  std::random_device rd;
  return std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-" + hex16(rd());
}

XPR_FUNC std::string& last_load_error() {
  thread_local std::string why;
  return why;
}

XPR_FUNC std::shared_ptr<Library> open_library(const std::string& path, const std::string& key) {
  // RTLD_LAZY: the kernel is linked with -fno-plt, so each function it calls is a GOT entry
  // bound while loading in either mode (a missing symbol still fails dlopen); what laziness
  // defers is libmvec's own 158 PLT slots, which RTLD_NOW bound on every first call (9 of the
  // ~65 us that loading a kernel and libmvec takes in a new process).
  void* h = ::dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL);
  if (!h) {
    const char* why = ::dlerror();
    last_load_error() = why ? why : "dlopen failed";
    return nullptr;
  }
  auto abi = reinterpret_cast<int (*)()>(::dlsym(h, "xpr_abi_version"));
  auto fn = reinterpret_cast<KernelFn>(::dlsym(h, "xpr_kernel"));
  if (!abi || !fn || abi() != 2) {
    ::dlclose(h);
    last_load_error() = "the library has no xpr_kernel of this version";
    return nullptr;
  }
  auto lib = std::make_shared<Library>();
  lib->handle = h;
  lib->fn = fn;
  lib->key = key;
  return lib;
}

XPR_FUNC std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

XPR_FUNC std::string compile_to_bytes(const std::string& source, const std::string& parent,
                                      const std::string& key) {
  std::string tmpl = parent + "/xpr-build-XXXXXX";
  std::vector<char> t(tmpl.begin(), tmpl.end());
  t.push_back('\0');
  if (!::mkdtemp(t.data()))
    throw core::error("jit: cannot create a temporary directory under " + parent + ": " +
                      std::strerror(errno));
  std::string dir = t.data();
  std::string src = dir + "/kernel_" + key + ".cpp", so = dir + "/kernel.so",
              log = dir + "/log.txt";
  if (!write_file(src, source))
    throw core::error("jit: cannot write " + src + ": " + std::strerror(errno));
  auto cmd = compile_command(src, so);
  auto t0 = std::chrono::steady_clock::now();
  int rc = run_process(cmd, log);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  log_line("compile " + key + " miss (" + join(cmd) + ") " + std::to_string(secs) + " s");
  if (rc != 0) {
    std::string text = read_text(log);
    std::error_code ec;
    std::filesystem::remove(so, ec);
    std::filesystem::remove(log, ec);
    throw core::compile_error("jit: the C++ compiler rejected the generated kernel (exit status " +
                                  std::to_string(rc) + "); source kept at " + src,
                              text);
  }
  std::string bytes = read_text(so);
  std::error_code ec;
  const bool wrote = std::filesystem::exists(so, ec);
  std::filesystem::remove_all(dir, ec);
  // A command that answers --version and exits 0 without writing the library (XPR_CXX=true) is
  // not a working compiler: said so, and the automatic backend falls back to the interpreter.
  if (bytes.empty())
    throw no_compiler_error("jit: the C++ compiler (XPR_CXX=" + env_or("XPR_CXX", "g++") +
                            ") exited with status 0 but wrote no kernel: expected a shared "
                            "library at " +
                            so + ", found " + (wrote ? "an empty file" : "none"));
  counters().compiles++;
  return bytes;
}

XPR_FUNC std::shared_ptr<const Library> load_library(const std::string& source) {
  const CompilerInfo& ci = compiler_info();
  if (!ci.ok)
    throw no_compiler_error("jit: no working C++ compiler (XPR_CXX=" + env_or("XPR_CXX", "g++") +
                            ")");
  std::string flags = join(compile_flags());
  // 128 bits: two hashes of the source under seeds drawn from the compiler, flags and target.
  const std::string tool = ci.version + "\n" + flags + "\n" + ci.target;
  std::string key = hex16(hash_bytes(source, hash_bytes(tool, 1))) +
                    hex16(hash_bytes(source, hash_bytes(tool, 2)));

  bool fresh = false;
  std::shared_ptr<LibrarySlot> slot = library_slot(key, fresh);
  std::call_once(slot->once, [&] {
    const std::string& dir = cache_dir();
    if (!dir.empty()) {
      std::string path = dir + "/" + key + ".so";
      auto t0 = std::chrono::steady_clock::now();
      if (const Entry e = check_entry(path); e != Entry::missing) {
        std::shared_ptr<Library> lib;
        if (e == Entry::valid) lib = open_library(path, key);
        if (lib) {
          counters().disk_hits++;
          log_line(
              "disk hit " + key + " " +
              std::to_string(
                  std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()) +
              " s");
          slot->lib = lib;
          return;
        }
        log_line("corrupt cache entry " + path + " removed; rebuilding");
        std::remove(path.c_str());
      }
      std::string bytes = with_trailer(compile_to_bytes(source, dir, key));
      std::string tmp = dir + "/." + key + "." + random_suffix() + ".tmp";
      if (write_file(tmp, bytes) && ::rename(tmp.c_str(), path.c_str()) == 0) {
        auto lib = open_library(path, key);
        cache_wrote(static_cast<std::int64_t>(bytes.size()), true);  // may remove this entry too
        if (lib) {
          slot->lib = lib;
          return;
        }
      }
      std::remove(tmp.c_str());
      // Fall through: load from a private temporary file instead.
      std::string t2 = dir + "/." + key + "." + random_suffix() + ".so";
      if (write_file(t2, bytes)) {
        auto lib = open_library(t2, key);
        std::remove(t2.c_str());
        if (lib) {
          slot->lib = lib;
          return;
        }
      }
      throw core::error("jit: cannot load the compiled kernel " + key + ": " + last_load_error());
    }
    // Memory-only: build and load in a private temporary directory, then delete the files.
    const char* tmpdir = std::getenv("TMPDIR");
    std::string parent = tmpdir && *tmpdir ? tmpdir : "/tmp";
    std::string bytes = compile_to_bytes(source, parent, key);
    std::string tmpl = parent + "/xpr-load-XXXXXX";
    std::vector<char> t(tmpl.begin(), tmpl.end());
    t.push_back('\0');
    if (!::mkdtemp(t.data())) throw core::error("jit: cannot create a temporary directory");
    std::string path = std::string(t.data()) + "/k.so";
    std::shared_ptr<Library> lib;
    if (write_file(path, bytes)) lib = open_library(path, key);
    std::error_code ec;
    std::filesystem::remove_all(t.data(), ec);
    if (!lib)
      throw core::error("jit: cannot load the compiled kernel " + key + ": " + last_load_error());
    slot->lib = lib;
  });
  if (!fresh) {
    counters().memory_hits++;
    log_line("memory hit " + key);
  }
  return slot->lib;
}

XPR_FUNC std::shared_ptr<LibrarySlot> library_slot(const std::string& key, bool& fresh,
                                                   bool create) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<LibrarySlot>> slots;
  std::lock_guard<std::mutex> lock(mu);
  fresh = false;
  if (!create) {
    auto it = slots.find(key);
    return it == slots.end() ? nullptr : it->second;
  }
  auto& s = slots[key];
  fresh = !s;
  if (!s) s = std::make_shared<LibrarySlot>();
  return s;
}

XPR_FUNC std::shared_ptr<const Library> load_entry(const std::string& key) {
  const std::string& dir = cache_dir();
  if (dir.empty() || key.size() != 32 ||
      key.find_first_not_of("0123456789abcdef") != std::string::npos)
    return nullptr;
  // A key this process has loaded or is loading (another program lowered to the same source) is
  // left to load_library, whose once answers it; here the slot is made only after a successful
  // load, so a failed one leaves the key to load_library untouched (which compiles or rebuilds).
  bool fresh = false;
  if (library_slot(key, fresh, false)) return nullptr;
  const std::string path = dir + "/" + key + ".so";
  std::shared_ptr<Library> lib;
  if (check_entry(path) == Entry::valid) lib = open_library(path, key);
  if (!lib) return nullptr;
  std::shared_ptr<LibrarySlot> slot = library_slot(key, fresh);
  std::call_once(slot->once, [&] {  // unless another thread's load_library got there first
    counters().disk_hits++;
    log_line("disk hit " + key + " (indexed)");
    slot->lib = lib;
  });
  return slot->lib;
}

XPR_FUNC const std::string& index_identity() {
  static const std::string id = []() -> std::string {
    const std::string& print = compiler_print();
    if (print.empty() || cache_dir().empty()) return {};
    // The object file that holds this function (the program, or libxpr_runtime.so in the
    // compiled-library mode): its inode, size and modification time.
    Dl_info info{};
    if (::dladdr(reinterpret_cast<void*>(&index_identity), &info) == 0) return {};
    const char* self =
        info.dli_fname && info.dli_fname[0] == '/' ? info.dli_fname : "/proc/self/exe";
    struct stat st {};
    if (::stat(self, &st) != 0) return {};
    return print + "|" + join(compile_flags()) + "|" + std::to_string(st.st_dev) + ":" +
           std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  }();
  return id;
}

inline constexpr std::string_view index_header = "xpr jit index 1\n";
inline constexpr std::uint64_t index_seed = 0x5850525f696e6478ull;

// The index's file for `program`, and the text its contents begin with.
inline std::string index_file(std::string_view program) {
  std::string head(index_header);
  head += index_identity();
  head += '\n';
  head += program;
  head += '\n';
  return cache_dir() + "/index-" + hex16(hash_bytes(head, 1)) + hex16(hash_bytes(head, 2)) + ".txt";
}

XPR_FUNC std::string read_index(std::string_view program) {
  if (index_identity().empty()) return {};
  const std::string text = read_text(index_file(program));
  // header, identity, program, body, then the hash of all before it (16 hex digits, newline).
  const std::string_view id = index_identity();
  const std::size_t head = index_header.size() + id.size() + 1 + program.size() + 1;
  if (text.size() < head + 17 || text.back() != '\n') return {};
  const std::string_view all(text);
  const std::string_view before = all.substr(0, all.size() - 17);
  if (hex16(hash_bytes(before, index_seed)) != all.substr(all.size() - 17, 16)) return {};
  if (all.substr(0, index_header.size()) != index_header ||
      all.substr(index_header.size(), id.size()) != id ||
      all[index_header.size() + id.size()] != '\n' ||
      all.substr(index_header.size() + id.size() + 1, program.size()) != program ||
      all[head - 1] != '\n')
    return {};
  return std::string(before.substr(head));
}

XPR_FUNC void write_index(std::string_view program, std::string_view body) {
  if (index_identity().empty()) return;
  std::string text(index_header);
  text += index_identity();
  text += '\n';
  text += program;
  text += '\n';
  text += body;
  text += hex16(hash_bytes(text, index_seed)) + "\n";
  const std::string path = index_file(program);
  const std::string tmp = path + "." + random_suffix() + ".tmp";
  if (!write_file(tmp, text) || ::rename(tmp.c_str(), path.c_str()) != 0) std::remove(tmp.c_str());
  cache_wrote(static_cast<std::int64_t>(text.size()), false);
}

}  // namespace xpr::codegen::detail
namespace xpr::codegen {

XPR_FUNC JitCacheStats jit_cache_stats() {
  auto& c = detail::counters();
  return {c.compiles.load(), c.memory_hits.load(), c.disk_hits.load(), c.kernels_in_memory.load()};
}

}  // namespace xpr::codegen
#endif  // XPR_DEFINITIONS
