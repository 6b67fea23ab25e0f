// What the service publishes to gateways is JSON. Access lists are built as JSON text from entries stored as
// text, so they are passed as JsonText and sent as they are instead of being parsed and serialised again.
export class JsonText {
  constructor(readonly text: string) {}
}

export function encodePayload(payload: unknown): string {
  return payload instanceof JsonText ? payload.text : JSON.stringify(payload);
}
