// The UDP listener UHPPOTE controllers push their events to (set-listener): each event is a 64-byte
// get-status packet (function 0x20). Anything else is counted and dropped, never logged (card numbers).
import dgram from 'node:dgram';
import { decodeEventPacket, type ControllerStatus } from './codec.ts';

/** Asked of the kernel for the listener's socket (a few thousand pushed packets with their overhead); capped at net.core.rmem_max. */
const RECEIVE_BUFFER_BYTES = 4 << 20;

export class ControllerEventListener {
  private ignoredCount = 0;

  private constructor(
    private readonly socket: dgram.Socket,
    private readonly onEvent: (status: ControllerStatus, from: { address: string; port: number }) => void,
  ) {
    socket.on('message', (message, rinfo) => this.onMessage(message, { address: rinfo.address, port: rinfo.port }));
    socket.on('error', () => undefined); // a receive error must not take the process down
  }

  static start(
    bind: { host: string; port: number /* 0: any */ },
    onEvent: (status: ControllerStatus, from: { address: string; port: number }) => void,
  ): Promise<ControllerEventListener> {
    return new Promise((resolve, reject) => {
      // A larger receive buffer holds a burst while the event loop is busy (the kernel caps it at
      // net.core.rmem_max); what is dropped anyway is read back by index after the gap.
      const socket = dgram.createSocket({ type: 'udp4', recvBufferSize: RECEIVE_BUFFER_BYTES });
      const failed = (error: Error): void => reject(error);
      socket.once('error', failed);
      socket.bind(bind.port, bind.host, () => {
        socket.off('error', failed);
        resolve(new ControllerEventListener(socket, onEvent));
      });
    });
  }

  /** Packets that were not 64-byte event packets. */
  get ignored(): number {
    return this.ignoredCount;
  }

  address(): { host: string; port: number } {
    const a = this.socket.address();
    return { host: a.address, port: a.port };
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      try {
        this.socket.close(() => resolve());
      } catch {
        resolve(); // already closed
      }
    });
  }

  private onMessage(message: Buffer, from: { address: string; port: number }): void {
    let status: ControllerStatus;
    try {
      status = decodeEventPacket(message);
    } catch {
      this.ignoredCount++;
      return;
    }
    try {
      this.onEvent(status, from);
    } catch {
      // the handler's failure is its own; the listener keeps listening
    }
  }
}
