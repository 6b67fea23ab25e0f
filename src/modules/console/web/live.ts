// One EventSource for the whole app (`GET /console/live`): `change` events tell which lists to refetch.
import { useEffect, useRef } from 'preact/hooks';
import { currentSession } from './api.ts';

export type Topic = 'events' | 'presence' | 'webhooks';
export interface Change {
  topic: Topic;
  account_id: number | null;
}

type Listener = (change: Change) => void;
const listeners = new Set<Listener>();
let source: EventSource | null = null;
let retry: ReturnType<typeof setTimeout> | null = null;
const statusListeners = new Set<(connected: boolean) => void>();

function setConnected(connected: boolean): void {
  for (const listener of statusListeners) listener(connected);
}

export function startLive(): void {
  if (source) return;
  source = new EventSource('/console/live');
  source.addEventListener('open', () => setConnected(true));
  source.addEventListener('change', (event) => {
    let change: Change;
    try {
      change = JSON.parse((event as MessageEvent<string>).data) as Change;
    } catch {
      return;
    }
    for (const listener of listeners) listener(change);
  });
  source.addEventListener('error', () => {
    setConnected(false);
    // A closed stream (not a reconnect in progress) is the session ending or the service going away:
    // ask the session endpoint (a 401 there signs out) and try again later.
    if (source && source.readyState === EventSource.CLOSED) {
      stopLive();
      retry = setTimeout(() => {
        retry = null;
        currentSession()
          .then((session) => session && startLive())
          .catch(() => startLive());
      }, 5000);
    }
  });
}

export function stopLive(): void {
  if (retry) clearTimeout(retry);
  retry = null;
  source?.close();
  source = null;
}

export function onLiveStatus(listener: (connected: boolean) => void): () => void {
  statusListeners.add(listener);
  return () => statusListeners.delete(listener);
}

/**
 * Calls `refetch` (debounced) after a change of one of `topics` in `account` (or of every account: a change
 * with `account_id` null, or `account` undefined).
 */
export function useLive(topics: Topic[], account: number | undefined, refetch: () => void, delayMs = 400): void {
  const latest = useRef(refetch);
  latest.current = refetch;
  const key = topics.join(',');
  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | null = null;
    const listener = (change: Change) => {
      if (!key.split(',').includes(change.topic)) return;
      if (account !== undefined && change.account_id !== null && change.account_id !== account) return;
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => latest.current(), delayMs);
    };
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (timer) clearTimeout(timer);
    };
  }, [key, account, delayMs]);
}
