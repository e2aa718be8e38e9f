//===- HostNcclCalls.cpp - NcclDeviceCalls over MPI, in host memory -------===//

#include "HostNcclCalls.h"

#include <mpi.h>

#include <functional>
#include <memory>
#include <vector>

namespace bitpipe::runtime {

namespace {

MPI_Datatype mpiTypeOf(NcclElement t) {
  switch (t) {
  case NcclElement::Float32:
    return MPI_FLOAT;
  case NcclElement::BFloat16:
    return MPI_UINT16_T; // moved, never summed (as the executor does)
  case NcclElement::Float64:
    return MPI_DOUBLE;
  case NcclElement::Int32:
    return MPI_INT32_T;
  }
  return MPI_DATATYPE_NULL;
}

Status mpiStatus(int err, const char *what) {
  if (err == MPI_SUCCESS)
    return Status::ok();
  return Status::error(ErrorCode::CommFailure,
                       formatString("%s failed (MPI error %d)", what, err));
}

/// A posted MPI request, shared by its lane and the events after it.
struct Op {
  MPI_Request request = MPI_REQUEST_NULL;
  bool done = false;
};
using OpRef = std::shared_ptr<Op>;

class HostNcclCalls final : public NcclDeviceCalls {
public:
  ~HostNcclCalls() override {
    for (MPI_Comm &c : comms_)
      if (c != MPI_COMM_NULL)
        MPI_Comm_free(&c);
  }

  Expected<std::string> uniqueId() override { return std::string("host"); }
  Status initWorld(const std::string &, int, int) override {
    MPI_Comm world = MPI_COMM_NULL;
    BP_TRY(mpiStatus(MPI_Comm_dup(MPI_COMM_WORLD, &world), "MPI_Comm_dup"));
    comms_.push_back(world);
    return Status::ok();
  }
  Status connectPeers(int, int) override { return Status::ok(); }
  Expected<int> split(bool member, int key) override {
    MPI_Comm c = MPI_COMM_NULL;
    BP_TRY(mpiStatus(MPI_Comm_split(comms_[0], member ? 0 : MPI_UNDEFINED,
                                    key, &c),
                     "MPI_Comm_split"));
    if (!member)
      return -1;
    comms_.push_back(c);
    return static_cast<int>(comms_.size() - 1);
  }
  Status groupStart() override {
    if (inGroup_)
      return Status::error(ErrorCode::InvalidArgument,
                           "host NCCL: groups nest");
    inGroup_ = true;
    return Status::ok();
  }
  Status groupEnd() override {
    if (!inGroup_)
      return Status::error(ErrorCode::InvalidArgument,
                           "host NCCL: a group ends that did not start");
    inGroup_ = false;
    std::vector<std::function<Status()>> queued;
    queued.swap(queued_);
    for (auto &post : queued)
      BP_TRY(post());
    return Status::ok();
  }
  Status send(int comm, const void *buf, int64_t count, NcclElement type,
              int peer) override {
    return p2p([=](MPI_Request *r) {
      return MPI_Isend(buf, static_cast<int>(count), mpiTypeOf(type), peer,
                       0, comms_[comm], r);
    });
  }
  Status recv(int comm, void *buf, int64_t count, NcclElement type,
              int peer) override {
    return p2p([=](MPI_Request *r) {
      return MPI_Irecv(buf, static_cast<int>(count), mpiTypeOf(type), peer,
                       0, comms_[comm], r);
    });
  }
  Status allReduce(int comm, void *buf, int64_t count,
                   NcclElement type) override {
    if (inGroup_)
      return Status::error(ErrorCode::InvalidArgument,
                           "host NCCL: an all-reduce inside a p2p group");
    auto op = std::make_shared<Op>();
    BP_TRY(mpiStatus(MPI_Iallreduce(MPI_IN_PLACE, buf,
                                    static_cast<int>(count), mpiTypeOf(type),
                                    MPI_SUM, comms_[comm], &op->request),
                     "MPI_Iallreduce"));
    lanes_[1].push_back(op);
    return Status::ok();
  }
  Status laneWaitsForCompute(Lane) override { return Status::ok(); }
  Expected<int> recordEvent(Lane lane) override {
    // Everything posted on the lane so far; inside a group, nothing of the
    // group is posted yet (as on a stream before ncclGroupEnd).
    std::vector<OpRef> &ops = lanes_[lane == Lane::PointToPoint ? 0 : 1];
    std::vector<OpRef> open;
    for (const OpRef &op : ops)
      if (!op->done)
        open.push_back(op);
    ops = open;
    int slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
      events_[slot] = open;
    } else {
      events_.push_back(open);
      slot = static_cast<int>(events_.size() - 1);
    }
    return slot;
  }
  Expected<bool> eventDone(int event) override {
    for (const OpRef &op : events_[event]) {
      if (op->done)
        continue;
      int flag = 0;
      BP_TRY(mpiStatus(MPI_Test(&op->request, &flag, MPI_STATUS_IGNORE),
                       "MPI_Test"));
      if (!flag)
        return false;
      op->done = true;
    }
    return true;
  }
  Status computeWaitsFor(int event) override {
    for (;;) {
      BP_ASSIGN(done, eventDone(event));
      if (done)
        return Status::ok();
    }
  }
  void releaseEvent(int event) override {
    events_[event].clear();
    free_.push_back(event);
  }
  // Timing: only the CUDA backend turns it on (NcclCommunicator::
  // setDeviceTiming), and the fake runs under the CPU backend; its slots
  // are kept and recycled all the same, but there is no device clock to
  // read them against.
  Expected<int> recordTimingEvent(Lane) override {
    if (!timingFree_.empty()) {
      int slot = timingFree_.back();
      timingFree_.pop_back();
      return slot;
    }
    return timingSlots_++;
  }
  Expected<float> timingEventMs(void *, int) override {
    return Status::error(ErrorCode::InvalidArgument,
                         "host NCCL: no device clock to time operations by "
                         "(expected the CPU backend to leave timing off)");
  }
  void releaseTimingEvent(int slot) override { timingFree_.push_back(slot); }
  Status asyncError(int) override { return Status::ok(); }
  void abortAll() override {}

private:
  Status p2p(std::function<int(MPI_Request *)> start) {
    auto post = [this, start]() -> Status {
      auto op = std::make_shared<Op>();
      BP_TRY(mpiStatus(start(&op->request), "posting a transfer"));
      lanes_[0].push_back(op);
      return Status::ok();
    };
    if (inGroup_) {
      queued_.push_back(post);
      return Status::ok();
    }
    return post();
  }

  std::vector<MPI_Comm> comms_;
  bool inGroup_ = false;
  std::vector<std::function<Status()>> queued_;
  std::vector<OpRef> lanes_[2];
  std::vector<std::vector<OpRef>> events_;
  std::vector<int> free_;
  int timingSlots_ = 0;
  std::vector<int> timingFree_;
};

} // namespace

std::unique_ptr<NcclDeviceCalls> createHostNcclCalls() {
  return std::make_unique<HostNcclCalls>();
}

} // namespace bitpipe::runtime
