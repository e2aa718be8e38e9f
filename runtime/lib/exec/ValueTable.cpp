//===- ValueTable.cpp - The values of one rank program in flight -*- C++ -*-===//

#include "ValueTable.h"

#include "bitpipe/runtime.h"

#include <cstdio>
#include <cstdlib>

namespace bitpipe::runtime {

std::shared_ptr<Buffer> Buffer::allocate(size_t bytes) {
  // The pool of runtime.h, where the stage functions' results come from too.
  void *p = bp_alloc(static_cast<int64_t>(bytes));
  if (!p)
    return nullptr;
  return std::make_shared<Buffer>(p, bytes);
}

Buffer::~Buffer() {
  if (pendingRecv.valid()) {
    // A receive may still write here: freeing would hand its memory to
    // someone else. The executor waits before dropping a received value, so
    // this is a bug; leak rather than corrupt.
    std::fprintf(stderr,
                 "bitpipe: internal error: a buffer with a pending receive "
                 "from rank %d (tag %d) was dropped; leaking it\n",
                 recvPeer, recvTag);
    return;
  }
  bp_free(data_);
}

const char *valueKindName(ValueTable::Kind kind) {
  switch (kind) {
  case ValueTable::Kind::Empty:
    return "nothing";
  case ValueTable::Kind::Tensor:
    return "a tensor";
  case ValueTable::Kind::Handle:
    return "a saved handle";
  case ValueTable::Kind::Token:
    return "an all-reduce token";
  }
  return "?";
}

void ValueTable::reset(int32_t numValues) {
  slots_.clear();
  slots_.resize(static_cast<size_t>(numValues));
}

Status ValueTable::checkFree(int32_t id) const {
  if (!valid(id))
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("value %d is out of range (the rank "
                                      "program has %d values)",
                                      id, size()));
  if (slots_[id].kind != Kind::Empty)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("value %d is defined twice in one step "
                                      "(it already holds %s)",
                                      id, valueKindName(slots_[id].kind)));
  return Status::ok();
}

Status ValueTable::defineTensor(int32_t id, BufferRef buffer) {
  Status s = checkFree(id);
  if (!s.isOk())
    return s;
  slots_[id].kind = Kind::Tensor;
  slots_[id].tensor = std::move(buffer);
  return Status::ok();
}

Status ValueTable::defineHandle(int32_t id,
                                std::unique_ptr<SavedHandle> handle) {
  Status s = checkFree(id);
  if (!s.isOk())
    return s;
  slots_[id].kind = Kind::Handle;
  slots_[id].handle = std::move(handle);
  return Status::ok();
}

Status ValueTable::defineToken(int32_t id, RequestHandle request,
                               int bucket) {
  Status s = checkFree(id);
  if (!s.isOk())
    return s;
  slots_[id].kind = Kind::Token;
  slots_[id].token = {request, bucket};
  return Status::ok();
}

static Status wrongKind(int32_t id, int32_t size, ValueTable::Kind have,
                        const char *want, const char *what) {
  if (id < 0 || id >= size)
    return Status::error(ErrorCode::InvalidArgument,
                         formatString("%s: value %d is out of range (the "
                                      "rank program has %d values)",
                                      what, id, size));
  return Status::error(ErrorCode::InvalidArgument,
                       formatString("%s: value %d holds %s, not %s", what, id,
                                    valueKindName(have), want));
}

Expected<BufferRef> ValueTable::tensor(int32_t id, const char *what) const {
  if (!valid(id) || slots_[id].kind != Kind::Tensor)
    return wrongKind(id, size(), valid(id) ? slots_[id].kind : Kind::Empty,
                     "a tensor", what);
  return slots_[id].tensor;
}

Expected<SavedHandle *> ValueTable::handle(int32_t id,
                                           const char *what) const {
  if (!valid(id) || slots_[id].kind != Kind::Handle)
    return wrongKind(id, size(), valid(id) ? slots_[id].kind : Kind::Empty,
                     "a saved handle", what);
  return slots_[id].handle.get();
}

Expected<ValueTable::Token> ValueTable::token(int32_t id,
                                              const char *what) const {
  if (!valid(id) || slots_[id].kind != Kind::Token)
    return wrongKind(id, size(), valid(id) ? slots_[id].kind : Kind::Empty,
                     "an all-reduce token", what);
  return slots_[id].token;
}

ValueTable::Taken ValueTable::take(int32_t id) {
  Taken t;
  if (!valid(id))
    return t;
  Slot &s = slots_[id];
  t.kind = s.kind;
  t.tensor = std::move(s.tensor);
  t.handle = std::move(s.handle);
  t.token = s.token;
  s = Slot();
  return t;
}

} // namespace bitpipe::runtime
