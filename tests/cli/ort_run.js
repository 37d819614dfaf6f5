// SPDX-License-Identifier: GPL-3.0-or-later
// onnxruntime's side of tests/cli/test_export_run.sh, through onnxruntime-node (Debian 12 packages
// no onnxruntime; installer/quickstart.sh bench installs it into KILN_NPM_DIR).
// Usage: NODE_PATH=$KILN_NPM_DIR/node_modules node ort_run.js MODEL.onnx OUT.npy NAME=IN.npy ...
// Runs MODEL on the CPU provider with the inputs (.npy of dtype <f4, |u1 or <U<n>: float32,
// uint8 and string tensors) and saves the output "probabilities" as a float32 .npy.
'use strict';
const ort = require('onnxruntime-node');
const { readNpy, saveNpy } = require('../bench/ort_time.js');

function loadNpy(file) {
  const { descr, shape, body } = readNpy(file);
  const copy = (n) => body.buffer.slice(body.byteOffset, body.byteOffset + n);
  if (descr === '<f4') return new ort.Tensor('float32', new Float32Array(copy(body.length)), shape);
  if (descr === '|u1') return new ort.Tensor('uint8', new Uint8Array(copy(body.length)), shape);
  if (descr.startsWith('<U')) {
    const width = Number(descr.slice(2)), n = shape.reduce((a, b) => a * b, 1), out = [];
    for (let i = 0; i < n; ++i) {
      let s = '';
      for (let k = 0; k < width; ++k) {
        const c = body.readUInt32LE(4 * (i * width + k));
        if (c === 0) break;
        s += String.fromCodePoint(c);
      }
      out.push(s);
    }
    return new ort.Tensor('string', out, shape);
  }
  throw new Error(`${file}: dtype ${descr} (needs <f4, |u1 or <U)`);
}

async function main() {
  const [model, out, ...inputs] = process.argv.slice(2);
  const sess = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], intraOpNumThreads: 1 });
  const feed = {};
  for (const item of inputs) {
    const eq = item.indexOf('=');
    feed[item.slice(0, eq)] = loadNpy(item.slice(eq + 1));
  }
  const p = (await sess.run(feed)).probabilities;
  saveNpy(out, p.dims, p.data);
}
main().catch((e) => { console.error(`ort_run.js: ${e.message}`); process.exit(1); });
