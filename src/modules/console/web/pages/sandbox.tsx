// The sandbox (SANDBOX=true only): outbox with setup links, clock, locking-system mode, MQTT publish.
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Field, FormError, Table, TextField, Time, useResource, useSubmit, useTitle } from '../components.tsx';
import type { LockingSystemConfirmed, SandboxClock, SandboxLockingSystem, SandboxMqtt, SandboxOutbox } from '../types.ts';

export function SandboxPage() {
  const clock = useResource<SandboxClock>('/admin/v1/sandbox/clock');
  const outbox = useResource<SandboxOutbox>('/admin/v1/sandbox/outbox', { topics: ['events'] });
  const [seconds, setSeconds] = useState('1800');
  const advance = useSubmit();
  const [account, setAccount] = useState('');
  const [mode, setMode] = useState('accept');
  const [delay, setDelay] = useState('0');
  const lockingSystem = useSubmit();
  const [lsNote, setLsNote] = useState<string | null>(null);
  const mqtt = useSubmit();
  const [publish, setPublish] = useState('accept');
  const [mqttNote, setMqttNote] = useState<string | null>(null);
  useTitle('Sandbox');
  return (
    <>
      <h1>Sandbox</h1>
      <section aria-labelledby="clock-title">
        <h2 id="clock-title">Clock</h2>
        <p data-testid="sandbox-now">Service time: {clock.data ? <Time iso={clock.data.now} /> : '…'}</p>
        <form
          class="inline"
          data-testid="advance-clock-form"
          onSubmit={(e) => {
            e.preventDefault();
            void advance.run(async () => {
              await api('POST', '/admin/v1/sandbox/clock/advance', { body: { seconds: Number(seconds) } });
              clock.reload();
              outbox.reload();
            });
          }}
        >
          <TextField
            label="Seconds to advance"
            name="seconds"
            type="number"
            min={0}
            required
            value={seconds}
            onValue={setSeconds}
            error={advance.error}
            hint="Console sessions run on this clock too: an hour or more ends your session (sign in again)"
            data-testid="advance-seconds"
          />
          <button type="submit" disabled={advance.busy} data-testid="advance-clock">
            Advance the clock
          </button>
        </form>
        <FormError error={advance.error} fields={['seconds']} />
      </section>
      <section aria-labelledby="ls-title">
        <h2 id="ls-title">Locking system</h2>
        <form
          data-testid="locking-system-form"
          onSubmit={(e) => {
            e.preventDefault();
            setLsNote(null);
            void lockingSystem.run(async () => {
              const answer = await api<SandboxLockingSystem>('PUT', '/admin/v1/sandbox/locking_system', { body: { account_id: Number(account), mode, delay_ms: Number(delay) } });
              setLsNote(`Account ${account}: ${answer.mode}.`);
            });
          }}
        >
          <TextField label="Account id" name="account_id" inputMode="numeric" required value={account} onValue={setAccount} error={lockingSystem.error} data-testid="ls-account" />
          <Field label="Mode" name="mode" error={lockingSystem.error}>
            {(a) => (
              <select {...a} value={mode} onChange={(e) => setMode((e.currentTarget as HTMLSelectElement).value)} data-testid="ls-mode">
                <option value="accept">Accept (changes confirm at once)</option>
                <option value="reject">Reject every write</option>
                <option value="hold">Hold key changes as sent</option>
              </select>
            )}
          </Field>
          <TextField label="Delay (ms)" name="delay_ms" type="number" min={0} value={delay} onValue={setDelay} error={lockingSystem.error} />
          <FormError error={lockingSystem.error} fields={['account_id', 'mode', 'delay_ms']} />
          <div class="actions">
            <button type="submit" disabled={lockingSystem.busy} data-testid="ls-save">
              Set mode
            </button>
            <button
              type="button"
              class="secondary"
              disabled={lockingSystem.busy || !account}
              data-testid="ls-confirm"
              onClick={() =>
                void lockingSystem.run(async () => {
                  const answer = await api<LockingSystemConfirmed>('POST', '/admin/v1/sandbox/locking_system/confirm', { body: { account_id: Number(account) } });
                  setLsNote(`${answer.confirmed} held changes confirmed.`);
                })
              }
            >
              Confirm held changes
            </button>
          </div>
          {lsNote && <p role="status">{lsNote}</p>}
        </form>
      </section>
      <section aria-labelledby="mqtt-title">
        <h2 id="mqtt-title">MQTT publish</h2>
        <form
          class="inline"
          data-testid="mqtt-form"
          onSubmit={(e) => {
            e.preventDefault();
            void mqtt.run(async () => {
              const answer = await api<SandboxMqtt>('PUT', '/admin/v1/sandbox/mqtt', { body: { publish } });
              setMqttNote(`Command publishes: ${answer.publish}.`);
            });
          }}
        >
          <Field label="Command publishes" name="publish" error={mqtt.error}>
            {(a) => (
              <select {...a} value={publish} onChange={(e) => setPublish((e.currentTarget as HTMLSelectElement).value)} data-testid="mqtt-publish">
                <option value="accept">Succeed</option>
                <option value="fail">Fail</option>
              </select>
            )}
          </Field>
          <button type="submit" disabled={mqtt.busy} data-testid="mqtt-save">
            Set
          </button>
        </form>
        <FormError error={mqtt.error} fields={['publish']} />
        {mqttNote && <p role="status">{mqttNote}</p>}
      </section>
      <section aria-labelledby="outbox-title">
        <h2 id="outbox-title">Outbox</h2>
        <p class="muted">Every SMS and e-mail the service sent, newest first.</p>
        <button type="button" class="secondary" onClick={outbox.reload} data-testid="outbox-refresh">
          Refresh the outbox
        </button>
        {outbox.error && <FormError error={outbox.error} />}
        {outbox.data && outbox.data.data.length === 0 && <p class="muted">Nothing sent yet.</p>}
        {outbox.data && outbox.data.data.length > 0 && (
          <Table label="Outbox">
            <thead>
              <tr>
                <th scope="col">Sent</th>
                <th scope="col">Channel</th>
                <th scope="col">To</th>
                <th scope="col">Subject</th>
                <th scope="col">Setup link</th>
              </tr>
            </thead>
            <tbody>
              {outbox.data.data.map((m) => (
                <tr key={m.id} data-testid={`outbox-row-${m.id}`}>
                  <td>
                    <Time iso={m.sent_at} />
                  </td>
                  <td>{m.channel}</td>
                  <td>{m.to}</td>
                  <td>{m.subject}</td>
                  <td>
                    {m.link ? (
                      <a href={m.link} target="_blank" rel="noopener noreferrer" data-testid={`outbox-link-${m.id}`}>
                        Open the setup link<span class="visually-hidden"> sent to {m.to}</span>
                      </a>
                    ) : (
                      <span class="muted">none</span>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </Table>
        )}
      </section>
    </>
  );
}
