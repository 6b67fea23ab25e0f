// The packet size guard follows MQTT packet boundaries however TCP cuts the bytes: legitimate traffic
// is never cut, and the first packet announcing too much is spotted from its header alone.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PacketSizeGuard } from '../../src/modules/devices/packet-size.ts';
import { fixedHeader } from '../helpers/gateways.ts';

/** A packet of `bodyBytes` after its fixed header (type byte, remaining length in 1–4 bytes). */
function packet(typeByte: number, bodyBytes: number): Buffer {
  return Buffer.concat([fixedHeader(typeByte, bodyBytes), Buffer.alloc(bodyBytes, 7)]);
}

function feed(guard: PacketSizeGuard, bytes: Buffer, cuts: number[]): boolean {
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    if (!guard.accept(bytes.subarray(from, cut))) return false;
    from = cut;
  }
  return true;
}

const MAX = 1024;
// Sizes around the one-, two- and three-byte length boundaries, up to exactly the limit.
const traffic = Buffer.concat([packet(0x10, 60), packet(0xc0, 0), packet(0x30, 127), packet(0x32, 128), packet(0x30, MAX - 3), packet(0xe0, 0)]);

test('traffic within the limit passes, whichever way it is cut', () => {
  for (let cut = 0; cut <= traffic.length; cut++) {
    assert.equal(feed(new PacketSizeGuard(MAX), traffic, [cut]), true, `cut at ${cut}`);
  }
  assert.equal(feed(new PacketSizeGuard(MAX), traffic, Array.from({ length: traffic.length }, (_, i) => i)), true, 'byte by byte');
});

test('a packet one byte over the limit, or announcing 250 MB, is refused from its header', () => {
  const over = Buffer.concat([traffic, packet(0x30, MAX - 2)]);
  for (let cut = 0; cut <= over.length; cut += 7) assert.equal(feed(new PacketSizeGuard(MAX), over, [cut]), false, `cut at ${cut}`);
  const huge = Buffer.from([0x10, 0x80, 0xe5, 0x9a, 0x77]); // CONNECT, 250,000,000 bytes announced
  assert.equal(new PacketSizeGuard(MAX).accept(huge.subarray(0, 3)), false, 'refused before the length is even complete');
  assert.equal(new PacketSizeGuard(MAX).accept(Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01])), false, 'a five-byte length is malformed');
});
