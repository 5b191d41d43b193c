// bench/compare.sh's jit workload: node (V8) allocating 200 000 Buffers of
// 100 to 149 bytes and keeping them, most of them from JIT-compiled code:
// the agent's stacks go through frames without unwind information there
// (docs/benchmarks.md, "node's stacks: frames without unwind information").
let a = [];
for (let i = 0; i < 200000; i++)
  a.push(Buffer.alloc(100 + i % 50));
console.log(a.length);
