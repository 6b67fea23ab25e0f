// The one clock every time rule reads. The sandbox clock is the same interface with an offset.

export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export class SandboxClock implements Clock {
  constructor(private offsetMs = 0) {}

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  get offset(): number {
    return this.offsetMs;
  }

  setOffset(offsetMs: number): void {
    this.offsetMs = offsetMs;
  }
}
