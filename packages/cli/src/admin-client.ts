// The operator API (/admin/v1, docs/spec/operator-api.md) has no SDK: this is its small client. It answers the
// same error envelope as the public API, so failures are the SDK's LatchkeyError and print the same way.
import { LatchkeyError } from '@latchkey/sdk';

export type Query = Record<string, string | number | boolean | undefined>;

export class AdminClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
  ) {}

  get<T>(path: string, query: Query = {}): Promise<T> {
    return this.request<T>('GET', path, { query });
  }

  post<T>(path: string, body?: unknown): Promise<T> {
    return this.request<T>('POST', path, { body });
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PATCH', path, { body });
  }

  put<T>(path: string, body: unknown): Promise<T> {
    return this.request<T>('PUT', path, { body });
  }

  async delete(path: string): Promise<void> {
    await this.request<unknown>('DELETE', path, {});
  }

  /** `path` is relative to /admin/v1. A 204 resolves to null. */
  async request<T>(method: string, path: string, options: { body?: unknown; query?: Query }): Promise<T> {
    const url = new URL(`${this.baseUrl}/admin/v1${path}`);
    for (const [name, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = { authorization: `Bearer ${this.token}`, accept: 'application/json' };
    if (options.body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(url, {
      method,
      headers,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
    const text = await response.text();
    const body = parse(text);
    if (!response.ok) throw LatchkeyError.fromResponse(response, body);
    return body as T;
  }
}

function parse(text: string): unknown {
  if (text === '') return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
