// A `GET /v1/webhooks/listen` stream read as a client would (server-sent events): its messages in order,
// comment lines counted, the first (`ready`) message parsed.
import assert from 'node:assert/strict';
import { waitFor } from './gateways.ts';

export interface ListenMessage {
  event: string;
  data: string;
}

export type ListenStream = Awaited<ReturnType<typeof openListenStream>>;

export async function openListenStream(serviceUrl: string, token: string, query = '') {
  const abort = new AbortController();
  const response = await fetch(`${serviceUrl}/v1/webhooks/listen${query}`, { headers: { authorization: `Bearer ${token}` }, signal: abort.signal });
  const messages: ListenMessage[] = [];
  let comments = 0;
  let ended = false;
  const reading = (async () => {
    if (!response.ok || !response.body) return;
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) comments++;
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (data.length > 0) messages.push({ event, data: data.join('\n') });
        }
      }
    } catch {
      // aborted by the test
    }
    ended = true;
  })();
  return {
    response,
    messages,
    comments: () => comments,
    ended: () => ended,
    deliveries: () => messages.filter((m) => m.event === 'delivery').map((m) => JSON.parse(m.data) as { headers: Record<string, string>; body: string }),
    async ready() {
      await waitFor(() => messages.length > 0, 'the ready message');
      const first = messages[0] as ListenMessage;
      assert.equal(first.event, 'ready');
      return JSON.parse(first.data) as { secret: string; events: string[]; location_id: number };
    },
    async close() {
      abort.abort();
      await reading;
    },
  };
}
