func.func @not_in_a_program() {
  bitpipe.optimizer_step
  return
}
