// host-waits.test's refusals: a call with no comment, one made at a time
// that is not outside the steps, and one said right.
void step() {
  cudaDeviceSynchronize();
  // Host-waiting call: every step.
  cudaFree(p);
  // Host-waiting call: teardown.
  cudaFreeHost(q);
  cudaMemcpyAsync(a, b, n, k, s); // asynchronous: not a host wait
  cudaStreamSynchronize(nullptr);
}
