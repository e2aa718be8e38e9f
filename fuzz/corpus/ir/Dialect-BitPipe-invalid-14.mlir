module attributes {bitpipe.world_size = 2 : i64} {
  bitpipe.program @rank2 rank 2 {}
}
