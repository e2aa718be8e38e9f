//===- ValueTable.h - The values of one rank program in flight --*- C++ -*-===//
//
// Program values (program.h, "Values") are dense ids; each id holds nothing,
// a tensor, a saved handle or an all-reduce token.
//
// Tensors are Buffers shared by reference count: the value table, the saved
// handles that bound them as forward arguments, pending sends and local
// copies each hold a reference, so bp_rt_release only drops the table's and
// the memory goes when the last holder lets go. A buffer filled by a receive
// carries its request until someone waits for it; waiting happens when the
// value is first read (Executor), never in a destructor.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_EXEC_VALUETABLE_H
#define BITPIPE_RUNTIME_EXEC_VALUETABLE_H

#include "comm/Communicator.h"
#include "core/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace bitpipe::runtime {

/// A tensor buffer from runtime.h's pool (bp_alloc): the linked target's
/// memory, host on the CPU and device on CUDA (Backend.h). Stage results
/// come from the same pool, and the executor allocates the rest there too,
/// so that every buffer goes back with bp_free.
class Buffer {
public:
  /// Takes ownership of \p data (from bp_alloc, or null when \p bytes is 0).
  Buffer(void *data, size_t bytes) : data_(data), bytes_(bytes) {}
  /// A fresh buffer of \p bytes, or null when malloc fails.
  static std::shared_ptr<Buffer> allocate(size_t bytes);
  ~Buffer();
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;

  void *data() const { return data_; }
  size_t bytes() const { return bytes_; }

  /// The receive that fills this buffer, until waited for.
  RequestHandle pendingRecv;
  int recvPeer = -1; // the sender's world rank
  int recvTag = 0;

private:
  void *data_;
  size_t bytes_;
};

using BufferRef = std::shared_ptr<Buffer>;

/// What a forward leaves for its backward: the forward's arguments (null
/// where the argument is a parameter: the backward reads the parameter
/// itself, unchanged until the optimizer step), its saved results and, after
/// the input half of a split backward, the stash and the output gradient
/// for the weight half.
struct SavedHandle {
  int forwardFn = -1;
  int64_t mb = 0;
  std::vector<BufferRef> args;
  std::vector<BufferRef> saved;
  std::vector<BufferRef> stash;
  BufferRef gradOfResult;
  bool inputHalfDone = false;
  /// Bytes of `saved` when the forward made the handle (what the manifest's
  /// peak_saved_bytes counts).
  int64_t savedBytes = 0;
};

class ValueTable {
public:
  enum class Kind { Empty, Tensor, Handle, Token };

  void reset(int32_t numValues);
  int32_t size() const { return static_cast<int32_t>(slots_.size()); }

  Kind kind(int32_t id) const { return slots_[id].kind; }
  bool valid(int32_t id) const { return id >= 0 && id < size(); }

  /// Each define fails if the id is out of range or already holds a value
  /// (program values are SSA: defined once per step).
  Status defineTensor(int32_t id, BufferRef buffer);
  Status defineHandle(int32_t id, std::unique_ptr<SavedHandle> handle);
  Status defineToken(int32_t id, RequestHandle request, int bucket);

  /// The value of \p id, failing (naming the id and \p what it was needed
  /// for) when it holds something else.
  Expected<BufferRef> tensor(int32_t id, const char *what) const;
  Expected<SavedHandle *> handle(int32_t id, const char *what) const;
  struct Token {
    RequestHandle request;
    int bucket = -1;
  };
  Expected<Token> token(int32_t id, const char *what) const;

  /// Empties \p id and returns what it held (for the caller to finish).
  struct Taken {
    Kind kind = Kind::Empty;
    BufferRef tensor;
    std::unique_ptr<SavedHandle> handle;
    Token token;
  };
  Taken take(int32_t id);

private:
  struct Slot {
    Kind kind = Kind::Empty;
    BufferRef tensor;
    std::unique_ptr<SavedHandle> handle;
    Token token;
  };
  Status checkFree(int32_t id) const;
  std::vector<Slot> slots_;
};

const char *valueKindName(ValueTable::Kind kind);

} // namespace bitpipe::runtime

#endif // BITPIPE_RUNTIME_EXEC_VALUETABLE_H
