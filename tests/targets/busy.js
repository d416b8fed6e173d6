// A JIT target for tests/test_jit.py: a recursive fib, called in a loop for SECONDS (argv).
// Run it as `node --perf-basic-prof busy.js SECONDS`: V8 then names its compiled code in
// /tmp/perf-PID.map. Prints "truth busy calls=N" at the end.
"use strict";

function fib(n) {
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

const end = Date.now() + 1000 * Number(process.argv[2] || 3);
let calls = 0;
while (Date.now() < end) {
  fib(22);
  calls++;
}
console.log(`truth busy calls=${calls}`);
