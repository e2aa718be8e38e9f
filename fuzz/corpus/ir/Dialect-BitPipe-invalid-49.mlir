bitpipe.program @rank0 rank 0 {
  bitpipe.optimizer_step microbatches 0
}
