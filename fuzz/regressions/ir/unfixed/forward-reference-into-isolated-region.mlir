func.func @a() {
  %x = arith.addi %s1, %s1 : i32
  func.func @b() {
    %s1 = arith.constant 1 : i32
   bogus
