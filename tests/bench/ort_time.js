// SPDX-License-Identifier: GPL-3.0-or-later
// onnxruntime's side of tests/bench/onnx_vs_ort.sh through onnxruntime-node (machines without
// Python's onnxruntime; installer/quickstart.sh bench installs it into KILN_NPM_DIR).
// Usage: NODE_PATH=$KILN_NPM_DIR/node_modules node ort_time.js MODEL.onnx INPUT.npy THREADS RUNS OUT.npy
// The same as ort_time.py: CPU execution provider, intraOpNumThreads=THREADS, interOp 1, all graph
// optimizations; one run, then RUNS timed runs; prints "median_ms min_ms" and saves the first
// output as .npy. Inputs and outputs are float32 (the benchmark's models).
'use strict';
const fs = require('fs');
const ort = require('onnxruntime-node');

// A C-order .npy file (format 1.0 or 2.0) -> {descr, shape, body}: its dtype string, shape and data bytes.
function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${file}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', start, start + hlen);
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${file}: needs a C-order array, header ${header}`);
  const descr = header.match(/'descr':\s*'([^']*)'/)[1];
  const shape = header.match(/'shape':\s*\(([^)]*)\)/)[1].split(',').filter((s) => s.trim()).map(Number);
  return { descr, shape, body: buf.subarray(start + hlen) };
}

// A float32 C-order .npy file -> {shape, data}.
function loadNpy(file) {
  const { descr, shape, body } = readNpy(file);
  if (descr !== '<f4') throw new Error(`${file}: needs a little-endian float32 array, got ${descr}`);
  const data = new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.length));
  return { shape, data };
}

function saveNpy(file, shape, data) {
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': (${shape.join(', ')}${shape.length === 1 ? ',' : ''}), }`;
  while ((10 + header.length + 1) % 64 !== 0) header += ' ';
  header += '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1; pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), Buffer.from(data.buffer, data.byteOffset, data.byteLength)]));
}

async function main() {
  const [model, input, threads, runs, out] = process.argv.slice(2);
  const sess = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], intraOpNumThreads: Number(threads), interOpNumThreads: 1,
    graphOptimizationLevel: 'all'});
  const x = loadNpy(input);
  const feed = { [sess.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) };
  const first = (await sess.run(feed))[sess.outputNames[0]];
  const ms = [];
  for (let i = 0; i < Number(runs); ++i) {
    const t0 = process.hrtime.bigint();
    await sess.run(feed);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  ms.sort((a, b) => a - b);
  saveNpy(out, first.dims, first.data);
  console.log(`${ms[Math.floor(ms.length / 2)].toFixed(3)} ${ms[0].toFixed(3)}`);
}
if (require.main === module) main().catch((e) => { console.error(`ort_time.js: ${e.message}`); process.exit(1); });
module.exports = { readNpy, loadNpy, saveNpy };  // qdq_ort.js, tests/cli/ort_run.js
