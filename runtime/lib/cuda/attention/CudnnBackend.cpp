//===- CudnnBackend.cpp - Owned cuDNN backend descriptors, typed setters -===//
//
// See CudnnBackend.h. Each typed setter passes exactly one CUDNN_TYPE_* and
// the element count of its C++ argument to cudnnBackendSetAttribute.
//
//===----------------------------------------------------------------------===//

#include "CudnnBackend.h"

#include <algorithm>

namespace bitpipe::runtime::cuda::cudnn {

void Descriptor::reset() {
  if (raw_)
    cudnnBackendDestroyDescriptor(raw_);
  raw_ = nullptr;
}

bool Builder::check(cudnnStatus_t status, const std::string &call) {
  if (status == CUDNN_STATUS_SUCCESS || !ok())
    return status == CUDNN_STATUS_SUCCESS;
  status_ = status;
  // cuDNN keeps a per-thread message for its last failure, which usually
  // says which attribute or constraint it rejected.
  char detail[1024] = {0};
  cudnnGetLastErrorString(detail, sizeof(detail));
  failure_ = call + ": " + cudnnGetErrorString(status);
  if (detail[0])
    failure_ += std::string(" (") + detail + ")";
  return false;
}

Descriptor Builder::create(cudnnBackendDescriptorType_t type,
                           const char *what) {
  if (!ok())
    return Descriptor();
  cudnnBackendDescriptor_t raw = nullptr;
  if (!check(cudnnBackendCreateDescriptor(type, &raw),
             std::string("cudnnBackendCreateDescriptor(") + what + ")"))
    return Descriptor();
  return Descriptor(raw);
}

void Builder::finalize(const Descriptor &d, const char *what) {
  if (!ok())
    return;
  check(cudnnBackendFinalize(d.get()),
        std::string("cudnnBackendFinalize(") + what + ")");
}

void Builder::set(const Descriptor &d, cudnnBackendAttributeName_t name,
                  cudnnBackendAttributeType_t type, int64_t count,
                  const void *values, const char *what) {
  if (!ok())
    return;
  check(cudnnBackendSetAttribute(d.get(), name, type, count, values),
        std::string("cudnnBackendSetAttribute(") + what + ")");
}

void Builder::setInt64(const Descriptor &d, cudnnBackendAttributeName_t name,
                       int64_t value, const char *what) {
  set(d, name, CUDNN_TYPE_INT64, 1, &value, what);
}

void Builder::setInt64s(const Descriptor &d, cudnnBackendAttributeName_t name,
                        const std::vector<int64_t> &values, const char *what) {
  set(d, name, CUDNN_TYPE_INT64, static_cast<int64_t>(values.size()),
      values.data(), what);
}

void Builder::setBool(const Descriptor &d, cudnnBackendAttributeName_t name,
                      bool value, const char *what) {
  // CUDNN_TYPE_BOOLEAN is C++ bool (one byte).
  set(d, name, CUDNN_TYPE_BOOLEAN, 1, &value, what);
}

void Builder::setFloat(const Descriptor &d, cudnnBackendAttributeName_t name,
                       float value, const char *what) {
  set(d, name, CUDNN_TYPE_FLOAT, 1, &value, what);
}

void Builder::setDataType(const Descriptor &d,
                          cudnnBackendAttributeName_t name,
                          cudnnDataType_t value, const char *what) {
  set(d, name, CUDNN_TYPE_DATA_TYPE, 1, &value, what);
}

void Builder::setPointwiseMode(const Descriptor &d,
                               cudnnBackendAttributeName_t name,
                               cudnnPointwiseMode_t value, const char *what) {
  set(d, name, CUDNN_TYPE_POINTWISE_MODE, 1, &value, what);
}

void Builder::setReduceOp(const Descriptor &d,
                          cudnnBackendAttributeName_t name,
                          cudnnReduceTensorOp_t value, const char *what) {
  set(d, name, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &value, what);
}

void Builder::setHeurMode(const Descriptor &d,
                          cudnnBackendAttributeName_t name,
                          cudnnBackendHeurMode_t value, const char *what) {
  set(d, name, CUDNN_TYPE_HEUR_MODE, 1, &value, what);
}

void Builder::setHandle(const Descriptor &d, cudnnBackendAttributeName_t name,
                        cudnnHandle_t handle, const char *what) {
  set(d, name, CUDNN_TYPE_HANDLE, 1, &handle, what);
}

void Builder::setDescriptor(const Descriptor &d,
                            cudnnBackendAttributeName_t name,
                            cudnnBackendDescriptor_t value, const char *what) {
  set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value, what);
}

void Builder::setDescriptors(
    const Descriptor &d, cudnnBackendAttributeName_t name,
    const std::vector<cudnnBackendDescriptor_t> &values, const char *what) {
  set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR,
      static_cast<int64_t>(values.size()), values.data(), what);
}

void Builder::setPointers(const Descriptor &d,
                          cudnnBackendAttributeName_t name,
                          const std::vector<void *> &values, const char *what) {
  set(d, name, CUDNN_TYPE_VOID_PTR, static_cast<int64_t>(values.size()),
      values.data(), what);
}

void Builder::setPointer(const Descriptor &d, cudnnBackendAttributeName_t name,
                         void *value, const char *what) {
  set(d, name, CUDNN_TYPE_VOID_PTR, 1, &value, what);
}

void Builder::setChars(const Descriptor &d, cudnnBackendAttributeName_t name,
                       const std::string &text, const char *what) {
  set(d, name, CUDNN_TYPE_CHAR, static_cast<int64_t>(text.size()), text.data(),
      what);
}

std::string Builder::getChars(const Descriptor &d,
                              cudnnBackendAttributeName_t name,
                              const char *what) {
  if (!ok())
    return "";
  const std::string call = std::string("cudnnBackendGetAttribute(") + what + ")";
  int64_t count = 0;
  if (!check(cudnnBackendGetAttribute(d.get(), name, CUDNN_TYPE_CHAR, 0, &count,
                                      nullptr),
             call))
    return "";
  std::string text(static_cast<size_t>(std::max<int64_t>(count, 0)), '\0');
  if (!check(cudnnBackendGetAttribute(d.get(), name, CUDNN_TYPE_CHAR, count,
                                      &count, text.data()),
             call))
    return "";
  // The count may include the terminating NUL.
  while (!text.empty() && text.back() == '\0')
    text.pop_back();
  return text;
}

int64_t Builder::getInt64(const Descriptor &d,
                          cudnnBackendAttributeName_t name, const char *what) {
  if (!ok())
    return 0;
  int64_t value = 0, count = 0;
  if (!check(cudnnBackendGetAttribute(d.get(), name, CUDNN_TYPE_INT64, 1,
                                      &count, &value),
             std::string("cudnnBackendGetAttribute(") + what + ")"))
    return 0;
  return value;
}

} // namespace bitpipe::runtime::cuda::cudnn
