// Webhook subscriptions of an account (public API): status, failure streak, create (secret once),
// pause/resume, ping, and one subscription's deliveries with redeliver.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api } from '../api.ts';
import { Checkboxes, FormError, ListState, LoadMore, OnceSecret, Secret, Table, TextField, Time, usePaged, useSort, useResource, useSubmit } from '../components.tsx';
import { Link } from '../router.tsx';
import { WEBHOOK_EVENTS, type Account, type Delivery, type Webhook, type WebhookCreated } from '../types.ts';

export function WebhooksSection({ account, webhookId }: { account: Account; webhookId?: string }) {
  if (webhookId) return <WebhookDetail account={account} id={webhookId} />;
  return <WebhookList account={account} />;
}

function WebhookList({ account }: { account: Account }) {
  const hooks = usePaged<Webhook>('/v1/webhooks', { account: account.id, topics: ['webhooks'] });
  const sorted = useSort(hooks.items, { url: (h) => h.url, status: (h) => h.status, failing: (h) => (h.failing_since ? Date.parse(h.failing_since) : null), last: (h) => (h.last_delivery_at ? Date.parse(h.last_delivery_at) : null) });
  const [created, setCreated] = useState<WebhookCreated | null>(null);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<string[]>(['*']);
  const [description, setDescription] = useState('');
  const form = useSubmit();
  return (
    <section aria-labelledby="webhooks-title">
      <h2 id="webhooks-title">Webhooks</h2>
      {created && (
        <OnceSecret title={`Signing secret of ${created.url}`} onDismiss={() => setCreated(null)} returnFocus='[data-testid="create-webhook"]'>
          <Secret label="Secret" value={created.secret} />
        </OnceSecret>
      )}
      <ListState list={hooks} empty="No webhook subscriptions yet." />
      {hooks.items.length > 0 && (
        <Table label="Webhook subscriptions">
          <thead>
            <tr>
              {sorted.header('url', 'URL')}
              <th scope="col">Events</th>
              {sorted.header('status', 'Status')}
              {sorted.header('failing', 'Failing since')}
              {sorted.header('last', 'Last delivery')}
            </tr>
          </thead>
          <tbody>
            {sorted.rows.map((h) => (
              <tr key={h.id} data-testid={`webhook-row-${h.id}`}>
                <td>
                  <Link href={`/console/accounts/${account.id}/webhooks/${h.id}`}>{h.url}</Link>
                  {h.description && <div class="muted">{h.description}</div>}
                </td>
                <td>{h.events.join(', ')}</td>
                <td>
                  <span class={h.status === 'active' ? 'badge ok' : 'badge bad'}>{h.status}</span>
                </td>
                <td>{h.failing_since ? <Time iso={h.failing_since} /> : <span class="muted">not failing</span>}</td>
                <td>
                  <Time iso={h.last_delivery_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      <LoadMore list={hooks} />
      <h3>Subscribe</h3>
      <form
        data-testid="create-webhook-form"
        onSubmit={(e) => {
          e.preventDefault();
          void form.run(async () => {
            setCreated(await api<WebhookCreated>('POST', '/v1/webhooks', { account: account.id, body: { url, events, description } }));
            setUrl('');
            setDescription('');
            hooks.reload();
          });
        }}
      >
        <TextField label="URL" name="url" type="url" required value={url} onValue={setUrl} error={form.error} hint="https:// on a public host" data-testid="webhook-url" />
        <Checkboxes
          legend="Events"
          name="events"
          options={[{ value: '*', label: 'Every event (*)' }, ...WEBHOOK_EVENTS.map((e) => ({ value: e, label: e }))]}
          selected={events}
          onChange={setEvents}
          error={form.error}
        />
        <TextField label="Description" name="description" value={description} onValue={setDescription} error={form.error} />
        <FormError error={form.error} fields={['url', 'events', 'description']} />
        <button type="submit" disabled={form.busy} data-testid="create-webhook">
          Subscribe
        </button>
      </form>
    </section>
  );
}

function WebhookDetail({ account, id }: { account: Account; id: string }) {
  const hook = useResource<Webhook>(`/v1/webhooks/${encodeURIComponent(id)}`, { account: account.id, topics: ['webhooks'] });
  const [status, setStatus] = useState('');
  const deliveries = usePaged<Delivery>(`/v1/webhooks/${encodeURIComponent(id)}/deliveries`, { account: account.id, query: { status }, topics: ['webhooks'] });
  const action = useSubmit();
  const [note, setNote] = useState<string | null>(null);
  const [shown, setShown] = useState<string | null>(null);
  const h = hook.data;
  // No such subscription here (404, or not an id at all): no deliveries to list.
  if (hook.error && (hook.error.status === 404 || hook.error.status === 400)) {
    return (
      <section aria-label="Webhook subscription">
        <p class="crumbs">
          <Link href={`/console/accounts/${account.id}/webhooks`}>Webhooks</Link> / subscription
        </p>
        <FormError error={hook.error} />
      </section>
    );
  }
  return (
    <section aria-labelledby="webhook-title">
      <p class="crumbs">
        <Link href={`/console/accounts/${account.id}/webhooks`}>Webhooks</Link> / subscription
      </p>
      {hook.error && <FormError error={hook.error} />}
      {h && (
        <>
          <h2 id="webhook-title">{h.url}</h2>
          <dl class="facts">
            <dt>Status</dt>
            <dd data-testid="webhook-status">{h.status}</dd>
            <dt>Failing since</dt>
            <dd>{h.failing_since ? <Time iso={h.failing_since} /> : 'not failing'}</dd>
            <dt>Events</dt>
            <dd>{h.events.join(', ')}</dd>
            <dt>Last delivery</dt>
            <dd>
              <Time iso={h.last_delivery_at} />
            </dd>
          </dl>
          <div class="actions">
            <button
              type="button"
              disabled={action.busy}
              data-testid={h.status === 'active' ? 'pause-webhook' : 'resume-webhook'}
              onClick={() =>
                void action.run(async () => {
                  await api('PATCH', `/v1/webhooks/${h.id}`, { account: account.id, body: { status: h.status === 'active' ? 'paused' : 'active' } });
                  hook.reload();
                })
              }
            >
              {h.status === 'active' ? 'Pause' : 'Resume'}
            </button>
            <button
              type="button"
              class="secondary"
              disabled={action.busy}
              data-testid="ping-webhook"
              onClick={() =>
                void action.run(async () => {
                  const d = await api<Delivery>('POST', `/v1/webhooks/${h.id}/ping`, { account: account.id });
                  setNote(`Ping: ${d.status}${d.response_status ? `, answered ${d.response_status}` : ''}${d.last_error ? `, ${d.last_error}` : ''}.`);
                  deliveries.reload();
                })
              }
            >
              Ping
            </button>
          </div>
          {note && (
            <p role="status" data-testid="webhook-note">
              {note}
            </p>
          )}
        </>
      )}
      <FormError error={action.error} />
      <h3>Deliveries</h3>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <TextField label="Status" name="status" value={status} onValue={setStatus} hint="e.g. delivered, exhausted; empty: all" data-testid="deliveries-status" />
      </form>
      <ListState list={deliveries} empty="No deliveries." />
      {deliveries.items.length > 0 && (
        <Table label="Deliveries">
          <thead>
            <tr>
              <th scope="col">Created</th>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
              <th scope="col">Attempts</th>
              <th scope="col">Response</th>
              <th scope="col">Last error</th>
              <th scope="col">Next attempt</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {deliveries.items.map((d) => (
              <tr key={d.id} data-testid={`delivery-row-${d.id}`}>
                <td>
                  <Time iso={d.created_at} />
                </td>
                <td>{d.event_type}</td>
                <td>{d.status}</td>
                <td>{d.attempt}</td>
                <td>{d.response_status ?? '—'}</td>
                <td>{d.last_error ?? ''}</td>
                <td>{d.next_attempt_at ? <Time iso={d.next_attempt_at} /> : '—'}</td>
                <td>
                  <div class="actions">
                    <button
                      type="button"
                      class="secondary small"
                      aria-expanded={shown === d.id}
                      onClick={() => setShown(shown === d.id ? null : d.id)}
                      data-testid={`show-delivery-${d.id}`}
                    >
                      Details<span class="visually-hidden"> of the {d.event_type} delivery</span>
                    </button>
                    <button
                      type="button"
                      class="secondary small"
                      disabled={action.busy}
                      data-testid={`redeliver-${d.id}`}
                      onClick={() =>
                        void action.run(async () => {
                          await api('POST', `/v1/webhooks/${id}/deliveries/${d.id}/redeliver`, { account: account.id });
                          deliveries.reload();
                        })
                      }
                    >
                      Redeliver<span class="visually-hidden"> {d.event_type}</span>
                    </button>
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </Table>
      )}
      <LoadMore list={deliveries} />
      {shown !== null && (
        <DeliveryDetail
          key={shown}
          delivery={deliveries.items.find((d) => d.id === shown)}
          onDone={() => {
            const id = shown;
            setShown(null);
            requestAnimationFrame(() => document.querySelector<HTMLElement>(`[data-testid="show-delivery-${id}"]`)?.focus());
          }}
        />
      )}
    </section>
  );
}

/** The most of a payload shown on the page; the rest is cut with a note (a delivery's `data` is small, as a rule). */
const PAYLOAD_SHOWN = 20_000;

/**
 * One delivery: what was sent (the event's `data`) and what the receiver answered. The API keeps the answer's
 * status and the last error, not its body, so no excerpt of the body can be shown.
 */
function DeliveryDetail({ delivery, onDone }: { delivery: Delivery | undefined; onDone: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), []);
  if (!delivery) return null;
  const json = delivery.payload === undefined || delivery.payload === null ? null : JSON.stringify(delivery.payload, null, 2);
  return (
    <section aria-labelledby="delivery-title" class="panel" data-testid="delivery-detail">
      <h3 id="delivery-title" tabIndex={-1} ref={heading}>
        Delivery of {delivery.event_type}
      </h3>
      <dl class="facts">
        <dt>Delivery</dt>
        <dd>
          <code>{delivery.id}</code>
        </dd>
        <dt>Event</dt>
        <dd>
          <code>{delivery.event_id}</code>
        </dd>
        <dt>Status</dt>
        <dd>
          {delivery.status}, attempt {delivery.attempt}
        </dd>
        <dt>Receiver answered</dt>
        <dd data-testid="delivery-answer">{delivery.response_status === null ? 'no HTTP answer' : `HTTP ${delivery.response_status}`}</dd>
        <dt>Last error</dt>
        <dd data-testid="delivery-error">{delivery.last_error ?? 'none'}</dd>
        <dt>Delivered</dt>
        <dd>
          <Time iso={delivery.delivered_at} />
        </dd>
      </dl>
      <h4>Payload (the event's data)</h4>
      {json === null ? (
        <p class="muted">Not kept: purged (the deliveries about a deleted person lose theirs).</p>
      ) : (
        <>
          <pre class="payload" data-testid="delivery-payload" tabIndex={0} aria-label="Payload">
            {json.length > PAYLOAD_SHOWN ? json.slice(0, PAYLOAD_SHOWN) : json}
          </pre>
          {json.length > PAYLOAD_SHOWN && <p class="muted">Cut at {PAYLOAD_SHOWN} characters of {json.length}.</p>}
        </>
      )}
      <div class="actions">
        <button type="button" class="secondary" onClick={onDone} data-testid="close-delivery">
          Close
        </button>
      </div>
    </section>
  );
}
