//===- ComputeWork.cpp - What a stage computes, by kernel shape -----------===//

#include "bitpipe/Schedule/ComputeWork.h"

#include <algorithm>

namespace bitpipe::sched {

namespace {

/// Adds \p amount to the entry of \p key in a vector sorted by key, making
/// one where there is none.
template <class Entry, class Key, class Field>
void addSorted(std::vector<Entry> &entries, const Key &key, Field field,
               double amount) {
  auto it = std::lower_bound(
      entries.begin(), entries.end(), key,
      [](const Entry &e, const Key &k) { return e.shape < k; });
  if (it == entries.end() || !(it->shape == key))
    it = entries.insert(it, Entry{key, 0});
  (*it).*field += amount;
}

} // namespace

void ComputeWork::addLinear(const LinearShape &shape, double count) {
  addSorted(linears, shape, &LinearWork::count, count);
}

void ComputeWork::addAttention(const AttentionShape &shape,
                               double forwardFlops) {
  addSorted(attentions, shape, &AttentionWork::forwardFlops, forwardFlops);
}

void ComputeWork::add(const ComputeWork &other) {
  for (const LinearWork &l : other.linears)
    addLinear(l.shape, l.count);
  for (const AttentionWork &a : other.attentions)
    addAttention(a.shape, a.forwardFlops);
  otherForwardFlops += other.otherForwardFlops;
  otherBackwardFlops += other.otherBackwardFlops;
  otherWeightGradFlops += other.otherWeightGradFlops;
}

double ComputeWork::forwardFlops() const {
  double flops = otherForwardFlops;
  for (const LinearWork &l : linears)
    flops += l.count * l.shape.productFlops();
  for (const AttentionWork &a : attentions)
    flops += a.forwardFlops;
  return flops;
}

double ComputeWork::inputGradFlops() const {
  double flops = otherBackwardFlops;
  for (const LinearWork &l : linears)
    flops += l.count * l.shape.productFlops();
  for (const AttentionWork &a : attentions)
    flops += 2 * a.forwardFlops;
  return flops;
}

double ComputeWork::weightGradFlops() const {
  double flops = otherWeightGradFlops;
  for (const LinearWork &l : linears)
    flops += l.count * l.shape.productFlops();
  return flops;
}

} // namespace bitpipe::sched
