bitpipe.program @rank0 rank 0 {
  %t = "bitpipe.allreduce_start"() {stages = array<i64: 4>, group = array<i64: 0, 3>, bucket = 0 : i64, grads = ["h4.w"]} : () -> !bitpipe.token
  bitpipe.allreduce_wait %t
}
