// The sandbox ("pause") program of the VM suite's pod sandboxes: no registry is reachable, so the
// image is made here from a 209-byte static x86-64 ELF written below. It does what Kubernetes' pause
// does for a sandbox: sleeps in pause(2) forever and exits 0 on SIGTERM or SIGINT. The instructions,
// at 0x400078:
//
//   mov eax, 13; mov edi, 15; lea rsi, [rip+act]; xor edx, edx; mov r10d, 8; syscall  rt_sigaction(SIGTERM)
//   mov eax, 13; mov edi, 2; syscall                                                   rt_sigaction(SIGINT)
//   loop: mov eax, 34; syscall; jmp loop                                               pause()
//   handler: xor edi, edi; mov eax, 60; syscall                                        exit(0)
//   act: { handler, SA_RESTORER, handler, 0 }
const BASE = 0x400000;
const HEADERS = 64 + 56;
const HANDLER = BASE + HEADERS + 48;

function u64(n) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return [...b];
}

const CODE = [
  ...[0xb8, 13, 0, 0, 0, 0xbf, 15, 0, 0, 0, 0x48, 0x8d, 0x35, 40, 0, 0, 0, 0x31, 0xd2],
  ...[0x41, 0xba, 8, 0, 0, 0, 0x0f, 0x05],
  ...[0xb8, 13, 0, 0, 0, 0xbf, 2, 0, 0, 0, 0x0f, 0x05],
  ...[0xb8, 34, 0, 0, 0, 0x0f, 0x05, 0xeb, 0xf7],
  ...[0x31, 0xff, 0xb8, 60, 0, 0, 0, 0x0f, 0x05],
  ...u64(HANDLER),
  ...u64(0x04000000),
  ...u64(HANDLER),
  ...u64(0),
];

/** The pause program as a static ELF executable. */
export function pauseBinary() {
  const size = HEADERS + CODE.length;
  const elf = Buffer.alloc(size);
  Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]).copy(elf, 0); // ELF64, little endian, version 1
  elf.writeUInt16LE(2, 16); // ET_EXEC
  elf.writeUInt16LE(0x3e, 18); // x86-64
  elf.writeUInt32LE(1, 20);
  elf.writeBigUInt64LE(BigInt(BASE + HEADERS), 24); // entry
  elf.writeBigUInt64LE(64n, 32); // program headers right after this header
  elf.writeUInt16LE(64, 52);
  elf.writeUInt16LE(56, 54);
  elf.writeUInt16LE(1, 56);
  elf.writeUInt32LE(1, 64); // PT_LOAD
  elf.writeUInt32LE(5, 68); // R + X
  elf.writeBigUInt64LE(BigInt(BASE), 80);
  elf.writeBigUInt64LE(BigInt(BASE), 88);
  elf.writeBigUInt64LE(BigInt(size), 96);
  elf.writeBigUInt64LE(BigInt(size), 104);
  elf.writeBigUInt64LE(0x1000n, 112);
  Buffer.from(CODE).copy(elf, HEADERS);
  return elf;
}
