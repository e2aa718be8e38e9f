//===- ToolInput.cpp - How the compiler tools vet their IR inputs ---------===//

#include "ToolInput.h"

#include "bitpipe/Support/TextGuard.h"

#include "mlir/Bytecode/BytecodeReader.h"
#include "mlir/IR/Block.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

using namespace llvm;

namespace {

Error failure(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

/// A temporary file that disappears when closed (tmpfile): the child
/// writes into it, the parent reads it back once the child is gone, so
/// neither waits on the other as it would on a full pipe.
class ScratchFile {
public:
  ScratchFile() : file_(std::tmpfile()) {}
  ~ScratchFile() {
    if (file_)
      std::fclose(file_);
  }
  ScratchFile(const ScratchFile &) = delete;
  ScratchFile &operator=(const ScratchFile &) = delete;

  bool ok() const { return file_ != nullptr; }
  int fd() const { return fileno(file_); }

  /// Everything written to it, through the descriptor, so far.
  std::string contents() const {
    std::string text;
    char chunk[1 << 16];
    off_t at = 0;
    for (;;) {
      ssize_t n = ::pread(fd(), chunk, sizeof chunk, at);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return text;
      text.append(chunk, static_cast<size_t>(n));
      at += n;
    }
  }

private:
  std::FILE *file_;
};

/// In the child: reads the bytecode and prints its ops as generic text with
/// their locations to `outFd`, MLIR's diagnostics to stderr. Ends the
/// process: exit 0 when printed, 1 when MLIR refused the file itself.
[[noreturn]] void printBytecodeAsText(MemoryBufferRef input,
                                      const mlir::DialectRegistry &registry,
                                      int outFd) {
  mlir::MLIRContext context(registry, mlir::MLIRContext::Threading::DISABLED);
  SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(
      MemoryBuffer::getMemBuffer(input, /*RequiresNullTerminator=*/false),
      SMLoc());
  mlir::SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  mlir::Block block;
  if (mlir::failed(mlir::parseSourceFile(sourceMgr, &block,
                                         mlir::ParserConfig(&context)))) {
    errs().flush();
    _exit(1);
  }
  raw_fd_ostream os(outFd, /*shouldClose=*/false);
  // Each op printed on its own, without a parent: as a top-level op, with
  // the aliases and resources a whole file carries.
  while (!block.empty()) {
    mlir::Operation &op = block.front();
    op.remove();
    op.print(os,
             mlir::OpPrintingFlags().printGenericOpForm().enableDebugInfo());
    os << '\n';
    op.destroy();
  }
  os.flush();
  _exit(os.has_error() ? 2 : 0);
}

/// "SIGSEGV" for 11: the signal's short name, which says what happened
/// without reading as this tool's own crash.
std::string signalName(int signal) {
  switch (signal) {
  case SIGSEGV:
    return "SIGSEGV";
  case SIGABRT:
    return "SIGABRT";
  case SIGBUS:
    return "SIGBUS";
  case SIGFPE:
    return "SIGFPE";
  case SIGILL:
    return "SIGILL";
  case SIGKILL:
    return "SIGKILL";
  }
  return "signal " + std::to_string(signal);
}

/// The first line of a crashed reader's stderr, when it says why in words
/// ("LLVM ERROR: SmallVector unable to grow ..."); its stack dump is not
/// for the user.
std::string crashReason(StringRef diagnostics) {
  StringRef first = diagnostics.split('\n').first.trim();
  if (!first.consume_front("LLVM ERROR: "))
    return "";
  return first.str();
}

/// \p input (bytecode) as text, read in a child process (ToolInput.h).
Expected<std::unique_ptr<MemoryBuffer>>
bytecodeAsText(const MemoryBuffer &input,
               const mlir::DialectRegistry &registry) {
  std::string name = input.getBufferIdentifier().str();
  ScratchFile out, err;
  if (!out.ok() || !err.ok())
    return failure(Twine("cannot create a temporary file to read its MLIR "
                         "bytecode in: ") +
                   std::strerror(errno));
  outs().flush();
  errs().flush();
  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child < 0)
    return failure(Twine("cannot start a process to read its MLIR bytecode "
                         "in: ") +
                   std::strerror(errno));
  if (child == 0) {
    ::dup2(err.fd(), STDERR_FILENO);
    printBytecodeAsText(input.getMemBufferRef(), registry, out.fd());
  }
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  std::string diagnostics = err.contents();
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return MemoryBuffer::getMemBufferCopy(out.contents(), name);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 1) {
    errs() << diagnostics;
    return failure("MLIR bytecode that MLIR's reader refuses (above)");
  }
  std::string how = WIFSIGNALED(status)
                        ? "its process ended on " + signalName(WTERMSIG(status))
                        : "its process exited with status " +
                              std::to_string(WEXITSTATUS(status));
  std::string why = crashReason(diagnostics);
  return failure("damaged MLIR bytecode: MLIR's bytecode reader failed on "
                 "it; " +
                 how + (why.empty() ? "" : ": " + why));
}

} // namespace

Expected<std::unique_ptr<MemoryBuffer>>
bitpipe::vetMlirInput(std::unique_ptr<MemoryBuffer> input,
                      const mlir::DialectRegistry &registry) {
  const bool bytecode = mlir::isBytecode(input->getMemBufferRef());
  if (bytecode) {
    Expected<std::unique_ptr<MemoryBuffer>> text =
        bytecodeAsText(*input, registry);
    if (!text)
      return text.takeError();
    input = std::move(*text);
  }
  std::optional<TextExcess> excess =
      findTextExcess(input->getBuffer(), TextSyntax::Mlir);
  if (!excess)
    return std::move(input);
  return failure(excess->what + " at byte " + std::to_string(excess->offset) +
                 (bytecode ? " of its text form" : "") +
                 ", which MLIR's parser cannot take safely");
}
