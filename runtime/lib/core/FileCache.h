//===- FileCache.h - Keyed entries that processes share ---------*- C++ -*-===//
//
// What is slow to make and the same on every run of a machine (cuDNN's
// execution plans, built with run-time compilation) is kept in a folder,
// one file per key, that every rank of a node and every later run reads.
// An entry is written through AtomicFileWriter (a temporary, then a
// rename), so that two ranks storing the same key at once both succeed and
// a reader never sees half an entry; each carries its length and CRC-32C,
// so that a damaged one is found, reported and made again rather than
// used. A cache never fails a run: every problem is a note, and the caller
// makes the entry as if there were no cache (docs/runtime-abi.md, "Start-up
// on CUDA").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CORE_FILECACHE_H
#define BITPIPE_RUNTIME_CORE_FILECACHE_H

#include "Status.h"

#include <optional>
#include <string>
#include <string_view>

namespace bitpipe::runtime {

class FileCache {
public:
  /// A cache in \p dir, created (with its parents) at the first store.
  explicit FileCache(std::string dir) : dir_(std::move(dir)) {}

  /// $XDG_CACHE_HOME/bitpipe, else $HOME/.cache/bitpipe, else "" (no
  /// cache: neither is set).
  static std::string defaultDir();

  /// Whether \p key may name an entry: 1 to 200 of [A-Za-z0-9._+-], not
  /// starting with '.'. Keys are made by the caller from what the entry
  /// depends on (library version, device, shape), never from user text.
  static bool validKey(std::string_view key);

  struct Lookup {
    std::optional<std::string> bytes; ///< the entry, when present and whole
    /// Why a present entry was not used ("" when there was none or it was
    /// used): unreadable, not an entry, truncated, corrupt.
    std::string problem;
  };
  /// The entry of \p key.
  Lookup load(std::string_view key) const;

  /// Writes \p bytes as the entry of \p key, replacing any; an error names
  /// the file.
  Status store(std::string_view key, std::string_view bytes) const;

  const std::string &dir() const { return dir_; }
  std::string pathOf(std::string_view key) const;

private:
  std::string dir_;
};

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_CORE_FILECACHE_H
