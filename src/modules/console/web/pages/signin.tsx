import { useState } from 'preact/hooks';
import { signIn } from '../api.ts';
import { FormError, TextField, useSubmit, useTitle } from '../components.tsx';

export function SignInPage({ onSignedIn }: { onSignedIn: () => void }) {
  const [token, setToken] = useState('');
  const form = useSubmit();
  useTitle('Sign in');
  return (
    <section class="narrow" aria-labelledby="signin-title">
      <h1 id="signin-title">Sign in</h1>
      <p>Sign in with the operator token (ADMIN_TOKEN) of this service.</p>
      <form
        data-testid="sign-in-form"
        onSubmit={(e) => {
          e.preventDefault();
          void form.run(async () => {
            await signIn(token);
            setToken('');
            onSignedIn();
          });
        }}
      >
        <TextField
          label="Operator token"
          name="token"
          type="password"
          autoComplete="current-password"
          required
          value={token}
          onValue={setToken}
          error={form.error}
          data-testid="operator-token"
        />
        <FormError error={form.error} fields={['token']} />
        <button type="submit" disabled={form.busy} data-testid="sign-in">
          Sign in
        </button>
      </form>
    </section>
  );
}
