//===- ToolOutput.cpp - How the compiler tools write their outputs --------===//

#include "ToolOutput.h"

#include "bitpipe/base/AtomicFile.h"
#include "bitpipe/base/TempFileCleanup.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include <optional>

namespace bitpipe {

namespace {

llvm::Error toError(const base::Status &status) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 status.message());
}

/// A raw_ostream over an AtomicFileWriter. The first failed write is kept
/// (and the writer has removed its temporary); what follows is dropped.
class AtomicFileStream : public llvm::raw_ostream {
public:
  explicit AtomicFileStream(base::AtomicFileWriter &writer) : writer_(writer) {
    SetBufferSize(1 << 16);
  }
  ~AtomicFileStream() override { flush(); }

  const base::Status &status() const { return status_; }

private:
  void write_impl(const char *ptr, size_t size) override {
    if (status_.isOk())
      status_ = writer_.write(ptr, size);
    pos_ += size;
  }
  uint64_t current_pos() const override { return pos_; }

  base::AtomicFileWriter &writer_;
  base::Status status_ = base::Status::ok();
  uint64_t pos_ = 0;
};

} // namespace

llvm::Error checkOutputPath(llvm::StringRef path) {
  base::Expected<base::OutputKind> kind =
      base::checkOutputDestination(path.str());
  if (!kind.isOk())
    return toError(kind.status());
  return llvm::Error::success();
}

llvm::Error writeOutputFile(llvm::StringRef path,
                            llvm::function_ref<void(llvm::raw_ostream &)> print) {
  base::Expected<base::AtomicFileWriter> writer =
      base::AtomicFileWriter::open(path.str());
  if (!writer.isOk())
    return toError(writer.status());
  {
    AtomicFileStream os(*writer);
    print(os);
    os.flush();
    if (!os.status().isOk())
      return toError(os.status());
  }
  base::Status committed = writer->commit();
  if (!committed.isOk())
    return toError(committed);
  return llvm::Error::success();
}

llvm::Expected<bool> writeOutputFileUnlessAbandoned(
    llvm::StringRef path, llvm::function_ref<bool(llvm::raw_ostream &)> print) {
  base::Expected<base::AtomicFileWriter> writer =
      base::AtomicFileWriter::open(path.str());
  if (!writer.isOk())
    return toError(writer.status());
  std::string held; // a stream's text, until print has succeeded
  {
    std::optional<AtomicFileStream> file;
    std::optional<llvm::raw_string_ostream> memory;
    llvm::raw_ostream *os;
    if (writer->kind() == base::OutputKind::File)
      os = &file.emplace(*writer);
    else
      os = &memory.emplace(held);
    if (!print(*os))
      return false; // the writer removes the temporary
    os->flush();
    if (file && !file->status().isOk())
      return toError(file->status());
  }
  base::Status s = base::Status::ok();
  if (!held.empty())
    s = writer->write(held.data(), held.size());
  if (s.isOk())
    s = writer->commit();
  if (!s.isOk())
    return toError(s);
  return true;
}

llvm::Error writeOutputFileFrom(
    llvm::StringRef path,
    llvm::function_ref<llvm::Error(llvm::StringRef file)> produce) {
  base::Expected<base::AtomicFileWriter> writer =
      base::AtomicFileWriter::open(path.str());
  if (!writer.isOk())
    return toError(writer.status());
  if (writer->kind() == base::OutputKind::File) {
    base::Status closed = writer->closeForExternalWriter();
    if (!closed.isOk())
      return toError(closed);
    if (llvm::Error e = produce(writer->tempPath()))
      return e; // the writer removes the temporary
    base::Status committed = writer->commit();
    if (!committed.isOk())
      return toError(committed);
    return llvm::Error::success();
  }
  return withScratchFile("bitpipe-output", "", [&](llvm::StringRef scratch) {
    if (llvm::Error e = produce(scratch))
      return e;
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> bytes =
        llvm::MemoryBuffer::getFile(scratch, /*IsText=*/false,
                                    /*RequiresNullTerminator=*/false);
    if (!bytes)
      return llvm::createStringError(bytes.getError(),
                                     "cannot read '" + scratch.str() +
                                         "': " + bytes.getError().message());
    base::Status s =
        writer->write((*bytes)->getBufferStart(), (*bytes)->getBufferSize());
    if (s.isOk())
      s = writer->commit();
    return s.isOk() ? llvm::Error::success() : toError(s);
  });
}

llvm::Error
withScratchFile(llvm::StringRef prefix, llvm::StringRef suffix,
                llvm::function_ref<llvm::Error(llvm::StringRef path)> use) {
  llvm::SmallString<128> path;
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile(prefix, suffix, path))
    return llvm::createStringError(
        ec, "cannot create a temporary file in the system's temporary "
            "directory: " + ec.message());
  base::RemovedTemporary scratch(path.str().str());
  return use(scratch.path());
}

} // namespace bitpipe
