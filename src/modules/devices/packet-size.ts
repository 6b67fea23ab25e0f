// The embedded broker's packet size limit (MQTT_MAX_PACKET_BYTES). mqtt-packet, Aedes's parser, has no
// limit: it buffers whatever length a packet announces, before the client has even authenticated. But
// every MQTT packet starts with its fixed header (a type byte, then the length of the rest in 1–4 bytes),
// so the size is known from the first bytes and the connection can be cut before anything is buffered.
import type { Socket } from 'node:net';

/** Follows the packet boundaries of one connection's bytes and spots the first packet announcing more than the limit. */
export class PacketSizeGuard {
  /** Bytes of the current packet's body still to pass. */
  private bodyLeft = 0;
  /** Inside a fixed header: after the type byte, reading the remaining length. */
  private inLength = false;
  private length = 0;
  private lengthBytes = 0;

  constructor(private readonly maxBytes: number) {}

  /** False once a packet (fixed header included) announces more than maxBytes, or its length is malformed. */
  accept(chunk: Buffer): boolean {
    let i = 0;
    while (i < chunk.length) {
      if (this.bodyLeft > 0) {
        const passed = Math.min(this.bodyLeft, chunk.length - i);
        this.bodyLeft -= passed;
        i += passed;
        continue;
      }
      const byte = chunk[i++] as number;
      if (!this.inLength) {
        this.inLength = true;
        this.length = 0;
        this.lengthBytes = 0;
        continue;
      }
      this.length += (byte & 0x7f) * 128 ** this.lengthBytes;
      this.lengthBytes++;
      // What is read so far is a lower bound of the size: refuse as early as it exceeds the limit.
      if (1 + this.lengthBytes + this.length > this.maxBytes) return false;
      if (byte & 0x80) {
        if (this.lengthBytes === 4) return false; // MQTT lengths have at most 4 bytes
        continue;
      }
      this.inLength = false;
      this.bodyLeft = this.length;
    }
    return true;
  }
}

/**
 * Destroys the socket as soon as a packet announces more than maxBytes. Attach after Aedes's handle():
 * its 'readable' listener keeps control of the flow, and 'data' then fires for each chunk Aedes reads,
 * before Aedes parses it (Node streams: with both listeners, 'data' is emitted by read()).
 */
export function limitPacketSize(socket: Socket, maxBytes: number, onOversize: () => void): void {
  const guard = new PacketSizeGuard(maxBytes);
  socket.on('data', (chunk: Buffer) => {
    if (guard.accept(chunk)) return;
    onOversize();
    socket.destroy();
  });
}
