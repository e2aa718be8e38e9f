//===- CudnnBackend.h - Owned cuDNN descriptors -----------------*- C++ -*-===//
//
// cuDNN 9's graph API (cudnn_graph.h) is untyped: every attribute is set
// with cudnnBackendSetAttribute(desc, name, type, count, void *), and a
// wrong type or count is only reported at run time. This wrapper pairs each
// C++ value type with its CUDNN_TYPE_* once (setInt64 <-> CUDNN_TYPE_INT64,
// setDescriptor <-> CUDNN_TYPE_BACKEND_DESCRIPTOR, ...) so the graph code
// cannot mix them up, owns descriptors (destroyed once, move-only), and
// records the first failing call with cuDNN's own message so that a whole
// graph can be written as straight-line code and checked once at the end.
//
// Used by the cuDNN attention (CudnnAttention.cpp). Descriptor creation and
// finalization work without a GPU, which CudnnAttentionTest checks.
//
//===----------------------------------------------------------------------===//

#ifndef BITPIPE_RUNTIME_CUDA_ATTENTION_CUDNNBACKEND_H
#define BITPIPE_RUNTIME_CUDA_ATTENTION_CUDNNBACKEND_H

#include <cudnn.h>

#include <cstdint>
#include <string>
#include <vector>

namespace bitpipe::runtime::cuda::cudnn {

/// One owned backend descriptor (cudnnBackendDestroyDescriptor on
/// destruction). Empty (null) when creation failed.
class Descriptor {
public:
  Descriptor() = default;
  explicit Descriptor(cudnnBackendDescriptor_t raw) : raw_(raw) {}
  ~Descriptor() { reset(); }
  Descriptor(Descriptor &&other) noexcept : raw_(other.raw_) {
    other.raw_ = nullptr;
  }
  Descriptor &operator=(Descriptor &&other) noexcept {
    if (this != &other) {
      reset();
      raw_ = other.raw_;
      other.raw_ = nullptr;
    }
    return *this;
  }
  Descriptor(const Descriptor &) = delete;
  Descriptor &operator=(const Descriptor &) = delete;

  cudnnBackendDescriptor_t get() const { return raw_; }
  explicit operator bool() const { return raw_ != nullptr; }
  void reset();

private:
  cudnnBackendDescriptor_t raw_ = nullptr;
};

/// Creates, configures and finalizes descriptors, remembering the first
/// call that failed. After a failure every later call does nothing (and
/// create returns an empty Descriptor), so callers check ok() once.
class Builder {
public:
  Descriptor create(cudnnBackendDescriptorType_t type, const char *what);
  void finalize(const Descriptor &d, const char *what);

  // Typed setters: `what` names the attribute in the failure message.
  void setInt64(const Descriptor &d, cudnnBackendAttributeName_t name,
                int64_t value, const char *what);
  void setInt64s(const Descriptor &d, cudnnBackendAttributeName_t name,
                 const std::vector<int64_t> &values, const char *what);
  void setBool(const Descriptor &d, cudnnBackendAttributeName_t name,
               bool value, const char *what);
  void setFloat(const Descriptor &d, cudnnBackendAttributeName_t name,
                float value, const char *what);
  void setDataType(const Descriptor &d, cudnnBackendAttributeName_t name,
                   cudnnDataType_t value, const char *what);
  void setPointwiseMode(const Descriptor &d, cudnnBackendAttributeName_t name,
                        cudnnPointwiseMode_t value, const char *what);
  void setReduceOp(const Descriptor &d, cudnnBackendAttributeName_t name,
                   cudnnReduceTensorOp_t value, const char *what);
  void setHeurMode(const Descriptor &d, cudnnBackendAttributeName_t name,
                   cudnnBackendHeurMode_t value, const char *what);
  void setHandle(const Descriptor &d, cudnnBackendAttributeName_t name,
                 cudnnHandle_t handle, const char *what);
  void setDescriptor(const Descriptor &d, cudnnBackendAttributeName_t name,
                     cudnnBackendDescriptor_t value, const char *what);
  void setDescriptors(const Descriptor &d, cudnnBackendAttributeName_t name,
                      const std::vector<cudnnBackendDescriptor_t> &values,
                      const char *what);
  void setPointers(const Descriptor &d, cudnnBackendAttributeName_t name,
                   const std::vector<void *> &values, const char *what);
  void setPointer(const Descriptor &d, cudnnBackendAttributeName_t name,
                  void *value, const char *what);
  void setChars(const Descriptor &d, cudnnBackendAttributeName_t name,
                const std::string &text, const char *what);

  /// Reads a text attribute (e.g. a plan's JSON representation).
  std::string getChars(const Descriptor &d, cudnnBackendAttributeName_t name,
                       const char *what);
  /// Reads one int64 attribute (e.g. a plan's workspace size).
  int64_t getInt64(const Descriptor &d, cudnnBackendAttributeName_t name,
                   const char *what);

  /// Records a failure of a call made outside the builder (cudnnCreate,
  /// cudnnBackendExecute, ...). Returns status == CUDNN_STATUS_SUCCESS.
  bool check(cudnnStatus_t status, const std::string &call);

  bool ok() const { return status_ == CUDNN_STATUS_SUCCESS; }
  cudnnStatus_t status() const { return status_; }
  /// "<call>: <status name> (<cuDNN's last error message>)", or "" when ok.
  const std::string &failure() const { return failure_; }

private:
  void set(const Descriptor &d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t count, const void *values,
           const char *what);

  cudnnStatus_t status_ = CUDNN_STATUS_SUCCESS;
  std::string failure_;
};

} // namespace bitpipe::runtime::cuda::cudnn

#endif // BITPIPE_RUNTIME_CUDA_ATTENTION_CUDNNBACKEND_H
