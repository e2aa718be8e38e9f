//===- CrashReport.h - Save the input that killed the target ----*- C++ -*-===//
//
// The mutation driver runs the target in its own process, so a crash ends
// the driver too. Before each input it records the input here; the signal
// handlers (installed once, on an alternate stack, so that a stack
// overflow from deep nesting is reported as well) then write the input to
// <crash-dir>/<kind>-<target>-<label> and print the path and the input, with
// async-signal-safe calls only, and die of the same signal. An alarm of
// --timeout seconds per input marks a hang the same way.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_FUZZ_CRASHREPORT_H
#define BITPIPE_FUZZ_CRASHREPORT_H

#include <cstddef>
#include <cstdint>

namespace bitpipe::fuzz {

/// Installs the handlers. \p crashDir and \p target must outlive the run.
/// Returns false (with errno set) when the alternate stack or a handler
/// cannot be installed.
bool installCrashReport(const char *crashDir, const char *target,
                        unsigned timeoutSeconds);

/// The input about to run; \p label names it in the file name (the run
/// number, or the replayed file's name). Arms the per-input alarm.
void beginInput(const uint8_t *data, size_t size, const char *label);

/// The input finished: disarms the alarm.
void endInput();

} // namespace bitpipe::fuzz

#endif // BITPIPE_FUZZ_CRASHREPORT_H
