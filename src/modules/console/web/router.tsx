// A small History API router: paths under /console, links that navigate without a reload.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<(path: string) => void>();

export function currentPath(): string {
  return window.location.pathname + window.location.search;
}

export function navigate(to: string, replace = false): void {
  if (to === currentPath()) return;
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  for (const listener of listeners) listener(to);
}

/** The current path and query, re-rendering on navigation and on back/forward. */
export function useLocation(): { path: string; query: URLSearchParams } {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const update = () => setPath(currentPath());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  const [pathname, search = ''] = path.split('?');
  return { path: pathname ?? '/', query: new URLSearchParams(search) };
}

/** Matches `/console/accounts/:id/…` style patterns; null when the path does not match. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split('/').filter(Boolean);
  const have = path.split('/').filter(Boolean);
  if (want.length !== have.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as string;
    const h = have[i] as string;
    if (w.startsWith(':')) params[w.slice(1)] = decodeURIComponent(h);
    else if (w !== h) return null;
  }
  return params;
}

interface LinkProps {
  href: string;
  children: ComponentChildren;
  /** This link's page is the one shown (aria-current). */
  current?: boolean;
  class?: string;
  onClick?: () => void;
  'data-testid'?: string;
}

export function Link({ href, children, current, onClick: clicked, ...rest }: LinkProps) {
  const onClick = (event: MouseEvent) => {
    clicked?.();
    if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(href);
  };
  return (
    <a href={href} onClick={onClick} aria-current={current ? 'page' : undefined} {...rest}>
      {children}
    </a>
  );
}
