bitpipe.program @rank0 rank 0 {
  bitpipe.repeat 0 {
  }
}
