//===- CommCApi.cpp - C ABI over the process-wide communicator --*- C++ -*-===//
//
// Generated code cannot hold C++ objects, so the entry points of
// bitpipe/comm.h act on one communicator per process. Errors are printed
// here (the message is the only place the details live) and returned as
// codes; the generated code decides whether to abort.
//
//===----------------------------------------------------------------------===//

#include "bitpipe/comm.h"

#include "comm/mpi/MpiCommunicator.h"

#include <cstdio>
#include <memory>

using namespace bitpipe::runtime;

static_assert(BP_ERR_TIMEOUT == static_cast<int>(ErrorCode::Timeout) &&
                  BP_ERR_COMM == static_cast<int>(ErrorCode::CommFailure) &&
                  BP_ERR_INVALID_ARGUMENT ==
                      static_cast<int>(ErrorCode::InvalidArgument),
              "C status codes must match ErrorCode");
static_assert(BP_DTYPE_F32 == static_cast<int>(DType::F32) &&
                  BP_DTYPE_U8 == static_cast<int>(DType::U8) &&
                  BP_DTYPE_F64 == static_cast<int>(DType::F64),
              "C dtype codes must match DType");

static std::unique_ptr<MpiCommunicator> &theComm() {
  static std::unique_ptr<MpiCommunicator> comm;
  return comm;
}

static bp_status_t report(const Status &s) {
  if (s.isOk())
    return BP_OK;
  // Timeouts were already printed by the wait, with the details.
  if (s.code() != ErrorCode::Timeout)
    std::fprintf(stderr, "bitpipe: %s\n", s.message().c_str());
  return static_cast<bp_status_t>(s.code());
}

static bp_status_t notInitialized() {
  std::fprintf(stderr, "bitpipe: communication used before bp_comm_init\n");
  return BP_ERR_INVALID_ARGUMENT;
}

static bool validDType(int32_t d) {
  return d >= BP_DTYPE_F32 && d <= BP_DTYPE_U8;
}

template <typename T>
static bp_status_t handleOut(Expected<T> e, int64_t *out) {
  if (!e.isOk())
    return report(e.status());
  *out = e->id;
  return BP_OK;
}

extern "C" {

bp_status_t bp_comm_init(int *argc, char ***argv) {
  if (theComm())
    return BP_OK;
  auto c = MpiCommunicator::create(argc, argv);
  if (!c.isOk())
    return report(c.status());
  theComm() = c.take();
  return BP_OK;
}

bp_status_t bp_comm_finalize(void) {
  theComm().reset();
  return BP_OK;
}

int32_t bp_comm_rank(void) { return theComm() ? theComm()->rank() : -1; }
int32_t bp_comm_size(void) { return theComm() ? theComm()->size() : 0; }

void bp_comm_set_timeout(double seconds) {
  if (theComm())
    theComm()->setTimeout(seconds);
}

bp_status_t bp_comm_create_group(const int32_t *ranks, int32_t n,
                                 int32_t *group) {
  if (!theComm())
    return notInitialized();
  if (!ranks || n <= 0 || !group)
    return BP_ERR_INVALID_ARGUMENT;
  auto g = theComm()->createGroup(std::vector<int>(ranks, ranks + n));
  if (!g.isOk())
    return report(g.status());
  *group = *g;
  return BP_OK;
}

bp_status_t bp_comm_send(const void *buf, int64_t count, int32_t dtype,
                         int32_t peer, int32_t tag, int64_t *request) {
  if (!theComm())
    return notInitialized();
  if (!request || !validDType(dtype))
    return BP_ERR_INVALID_ARGUMENT;
  return handleOut(
      theComm()->send(buf, count, static_cast<DType>(dtype), peer, tag),
      request);
}

bp_status_t bp_comm_recv(void *buf, int64_t count, int32_t dtype,
                         int32_t peer, int32_t tag, int64_t *request) {
  if (!theComm())
    return notInitialized();
  if (!request || !validDType(dtype))
    return BP_ERR_INVALID_ARGUMENT;
  return handleOut(
      theComm()->recv(buf, count, static_cast<DType>(dtype), peer, tag),
      request);
}

bp_status_t bp_comm_wait(int64_t request) {
  if (!theComm())
    return notInitialized();
  return report(theComm()->wait(RequestHandle{request}));
}

bp_status_t bp_allreduce_start(void *buf, int64_t count, int32_t dtype,
                               int32_t group, int64_t *request) {
  if (!theComm())
    return notInitialized();
  if (!request || !validDType(dtype))
    return BP_ERR_INVALID_ARGUMENT;
  return handleOut(theComm()->allReduceStart(buf, count,
                                             static_cast<DType>(dtype), group),
                   request);
}

bp_status_t bp_allreduce_wait(int64_t request) {
  if (!theComm())
    return notInitialized();
  return report(theComm()->allReduceWait(RequestHandle{request}));
}

bp_status_t bp_comm_broadcast(void *buf, int64_t count, int32_t dtype,
                              int32_t group) {
  if (!theComm())
    return notInitialized();
  if (!validDType(dtype))
    return BP_ERR_INVALID_ARGUMENT;
  return report(
      theComm()->broadcast(buf, count, static_cast<DType>(dtype), group));
}

bp_status_t bp_comm_barrier(int32_t group) {
  if (!theComm())
    return notInitialized();
  return report(theComm()->barrier(group));
}

void bp_comm_abort(int32_t code, const char *message) {
  std::string m = message ? message : "(no message)";
  if (theComm())
    theComm()->abort(code, m);
  std::fprintf(stderr, "bitpipe: fatal: %s\n", m.c_str());
  std::_Exit(code == 0 ? 1 : code);
}

} // extern "C"
