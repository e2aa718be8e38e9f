bitpipe.program @a rank 0 {}
bitpipe.program @b rank 0 {}
