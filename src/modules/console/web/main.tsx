// The console app: session check, the page frame (header, navigation, main) and the routes.
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import './app.css';
import { currentSession, get, onSignedOut, signOut } from './api.ts';
import { onLiveStatus, startLive, stopLive } from './live.ts';
import { useTitle } from './components.tsx';
import { Link, match, useLocation } from './router.tsx';
import { AccountPage } from './pages/account.tsx';
import { OverviewPage } from './pages/overview.tsx';
import { OfflineGatewaysPage } from './pages/offline-gateways.tsx';
import { SandboxPage } from './pages/sandbox.tsx';
import { SignInPage } from './pages/signin.tsx';

export const BRAND = document.body.dataset.brand || 'Latchkey';

type SessionState = 'checking' | 'signed-out' | 'signed-in';

function App() {
  const [session, setSession] = useState<SessionState>('checking');
  const [sandbox, setSandbox] = useState(false);
  const [live, setLive] = useState(false);
  const [problem, setProblem] = useState<string | null>(null);
  const { path } = useLocation();
  const main = useRef<HTMLElement>(null);
  const firstPath = useRef(true);

  useEffect(() => {
    currentSession()
      .then((s) => setSession(s ? 'signed-in' : 'signed-out'))
      .catch((error: Error) => {
        setProblem(error.message);
        setSession('signed-out');
      });
    const offSignedOut = onSignedOut(() => setSession('signed-out'));
    const offLive = onLiveStatus(setLive);
    return () => {
      offSignedOut();
      offLive();
    };
  }, []);

  useEffect(() => {
    if (session !== 'signed-in') {
      stopLive();
      return;
    }
    startLive();
    // The sandbox pages exist only on a service started with SANDBOX=true.
    get('/admin/v1/sandbox/clock')
      .then(() => setSandbox(true))
      .catch(() => setSandbox(false));
  }, [session]);

  // A new page moves the focus to it, as a page load would (screen readers announce its heading).
  useEffect(() => {
    if (firstPath.current) {
      firstPath.current = false;
      return;
    }
    main.current?.focus();
  }, [path]);

  const signedIn = session === 'signed-in';
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <Link href="/console" class="brand">
          {BRAND} console
        </Link>
        {signedIn && (
          <nav aria-label="Main">
            <ul>
              <li>
                <Link href="/console" current={path === '/console'}>
                  Overview
                </Link>
              </li>
              {sandbox && (
                <li>
                  <Link href="/console/sandbox" current={path === '/console/sandbox'} data-testid="nav-sandbox">
                    Sandbox
                  </Link>
                </li>
              )}
            </ul>
          </nav>
        )}
        {signedIn && (
          <div class="session">
            <span class={live ? 'live on' : 'live'} role="status" data-testid="live-status">
              {live ? 'Live' : 'Not live'}
            </span>
            <button type="button" class="secondary" data-testid="sign-out" onClick={() => void signOut().catch(() => setSession('signed-out'))}>
              Sign out
            </button>
          </div>
        )}
      </header>
      <main id="main" tabIndex={-1} ref={main}>
        {problem && session === 'signed-out' && (
          <p class="error" role="alert">
            {problem}
          </p>
        )}
        {session === 'checking' && <p class="muted">Loading…</p>}
        {session === 'signed-out' && <SignInPage onSignedIn={() => setSession('signed-in')} />}
        {signedIn && <Routes path={path} sandbox={sandbox} />}
      </main>
    </>
  );
}

function Routes({ path, sandbox }: { path: string; sandbox: boolean }) {
  const trimmed = path.replace(/\/+$/, '') || '/console';
  if (trimmed === '/console') return <OverviewPage />;
  if (trimmed === '/console/sandbox') return sandbox ? <SandboxPage /> : <NotFound />;
  if (trimmed === '/console/gateways/offline') return <OfflineGatewaysPage />;
  const account =
    match('/console/accounts/:id', trimmed) ??
    match('/console/accounts/:id/:tab', trimmed) ??
    match('/console/accounts/:id/:tab/:item', trimmed);
  if (account && /^\d+$/.test(account.id ?? '')) {
    return <AccountPage id={Number(account.id)} tab={account.tab ?? 'locations'} item={account.item} />;
  }
  return <NotFound />;
}

function NotFound() {
  useTitle('Page not found');
  return (
    <>
      <h1>Page not found</h1>
      <p>
        There is no console page here. <Link href="/console">Back to the overview</Link>
      </p>
    </>
  );
}

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}
