// SPDX-License-Identifier: GPL-3.0-or-later
// onnxruntime's side of tests/bench/qdq_vs_ort.sh through onnxruntime-node: runs a QDQ model on
// float32 .npy batches and saves its first output per batch; the session (CPU provider,
// intraOpNumThreads=THREADS, all graph optimizations) writes the model as onnxruntime optimized it
// (the optimizedModelFilePath session option), where its QDQ fusions show as QLinearConv etc.
// Usage: NODE_PATH=$KILN_NPM_DIR/node_modules node qdq_ort.js MODEL.onnx OPTIMIZED.onnx THREADS IN.npy OUT.npy ...
'use strict';
const ort = require('onnxruntime-node');
const { loadNpy, saveNpy } = require('./ort_time.js');

async function main() {
  const [model, optimized, threads, ...files] = process.argv.slice(2);
  const sess = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], intraOpNumThreads: Number(threads), interOpNumThreads: 1,
    graphOptimizationLevel: 'all', optimizedModelFilePath: optimized});
  for (let i = 0; i + 1 < files.length; i += 2) {
    const x = loadNpy(files[i]);
    const y = (await sess.run({ [sess.inputNames[0]]: new ort.Tensor('float32', x.data, x.shape) }))[sess.outputNames[0]];
    saveNpy(files[i + 1], y.dims, y.data);
  }
}
main().catch((e) => { console.error(`qdq_ort.js: ${e.message}`); process.exit(1); });
