//===- TempFileCleanup.h - Temporaries removed on failure -------*- C++ -*-===//
//
// A tool that writes "<out>.tmp.<pid>" and is stopped by Ctrl-C, by
// `kill`, or by mpirun forwarding SIGTERM to its ranks must not leave the
// temporary behind. A RemovedTemporary is a file path that is unlinked when
// the object dies (unless released) and, while it lives, by a handler of
// SIGINT, SIGTERM, SIGHUP, SIGPIPE and SIGXFSZ, which then lets the signal
// take its previous course: the default action (the process ends with that
// signal) or the handler that was installed before. Dispositions set to
// "ignore" are left alone.
//
// The handler only calls unlink(2), sigaction(2) and raise(3), which are
// async-signal-safe; the paths it removes live in a fixed table that is
// filled before a file is created and emptied after it is renamed or
// removed (docs/files.md, "Temporaries").
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_BASE_TEMPFILECLEANUP_H
#define BITPIPE_BASE_TEMPFILECLEANUP_H

#include <string>

namespace bitpipe::base {

class RemovedTemporary {
public:
  RemovedTemporary() = default;
  /// Registers \p path for removal (it need not exist yet), and puts the
  /// cleanup handler in front of the signals' current handlers.
  explicit RemovedTemporary(std::string path);
  RemovedTemporary(RemovedTemporary &&other) noexcept;
  RemovedTemporary &operator=(RemovedTemporary &&other) noexcept;
  RemovedTemporary(const RemovedTemporary &) = delete;
  RemovedTemporary &operator=(const RemovedTemporary &) = delete;
  /// Unlinks the file unless release() was called.
  ~RemovedTemporary();

  /// The file is kept (it was renamed, or is someone else's now).
  void release();
  /// Unlinks the file now and forgets it.
  void remove();

  const std::string &path() const { return path_; }
  /// Whether a signal would remove the file (false when the table of
  /// temporaries is full or the path is too long for it: the file is then
  /// still removed by remove() and the destructor).
  bool coveredBySignals() const { return slot_ >= 0; }

private:
  std::string path_;
  int slot_ = -1;
  bool live_ = false;
};

} // namespace bitpipe::base

#endif // BITPIPE_BASE_TEMPFILECLEANUP_H
