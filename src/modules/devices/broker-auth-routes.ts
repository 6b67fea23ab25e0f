// Authentication and ACL endpoints for brokers that ask over HTTP whom to let in (EMQX's HTTP authentication
// and authorization; see docs/brokers.md for the configuration). Request and answer follow EMQX 5: a JSON body
// with the client's user name, client id and password (or topic and action), answered `200 { result }` with
// `allow`, `deny` or `ignore`. The gateways' user names (`gateway-{id}`) are the service's to judge: allowed
// or denied. Every other user name is `ignore`d, so the broker's next source decides (the service's own user).
//
// The broker proves itself with `Authorization: Bearer {MQTT_HTTP_AUTH_SECRET}`. A client IP that presented a
// wrong secret 30 times in a minute has its wrong secrets answered 429 until the window rolls; the right secret
// always passes, since every broker node behind one NAT shares the address that anyone may fill with failures.
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { FAILED_AUTH_PER_MINUTE, type RateLimits } from '../../platform/rate-limit.ts';
import { ErrorEnvelope } from '../../platform/schemas.ts';
import { hashToken, sameHash } from '../../platform/secrets.ts';
import { gatewayIdOf } from './broker-accounts.ts';
import { checkGatewayCredentials, mayPublish, maySubscribe } from './gateway-access.ts';
import { gatewayExists } from './store.ts';
import { gatewayTopicPrefix } from './topics.ts';

export const BROKER_AUTHENTICATE_PATH = '/broker/v1/authenticate';
export const BROKER_AUTHORIZE_PATH = '/broker/v1/authorize';
const FAILED_SECRET_BUCKET = 'broker-auth-failed';
/** A broker's request is a few hundred bytes; nothing larger is read. */
const BODY_LIMIT = 8 * 1024;

const Username = Type.String({ maxLength: 256 });
const ClientId = Type.String({ maxLength: 256 });
const AuthenticateBody = Type.Object(
  { username: Username, clientid: ClientId, password: Type.String({ maxLength: 1024 }) },
  { additionalProperties: false },
);
const AuthorizeBody = Type.Object(
  {
    username: Username,
    clientid: ClientId,
    topic: Type.String({ minLength: 1, maxLength: 65_535 }),
    action: Type.Union([Type.Literal('publish'), Type.Literal('subscribe')]),
    // Sent by brokers that can (EMQX's ${qos} and ${retain}): the protocol's QoS and retain rules then hold
    // on that broker as they do on the embedded one. EMQX's body template sends them as text.
    qos: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: 2 }), Type.Union([Type.Literal('0'), Type.Literal('1'), Type.Literal('2')])])),
    retain: Type.Optional(Type.Union([Type.Boolean(), Type.Literal('true'), Type.Literal('false')])),
  },
  { additionalProperties: false },
);
const Result = Type.Union([Type.Literal('allow'), Type.Literal('deny'), Type.Literal('ignore')]);
type Result = 'allow' | 'deny' | 'ignore';
const errorsOf = { 400: ErrorEnvelope, 401: ErrorEnvelope, 413: ErrorEnvelope, 422: ErrorEnvelope, 429: ErrorEnvelope };

export function brokerAuthRoutes(app: ApiInstance, deps: { db: Database; limits: RateLimits; secret: string; refused: (gatewayId: number) => void }): void {
  const { db, limits } = deps;
  const secretHash = hashToken(deps.secret);

  // Before the body is read. The secret (at least 32 characters) is compared first, as hashes in constant
  // time: guessing it is hopeless, so the lock-out only bounds the wrong ones and never refuses the broker.
  const brokerOnly = async (request: FastifyRequest, _reply: FastifyReply) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    if (match && sameHash(hashToken(match[1] as string), secretHash)) return;
    const lockout = await limits.isExhausted(FAILED_SECRET_BUCKET, request.clientKey, FAILED_AUTH_PER_MINUTE);
    if (lockout.exceeded) throw limits.refusal(lockout);
    await limits.consume(FAILED_SECRET_BUCKET, request.clientKey, FAILED_AUTH_PER_MINUTE);
    throw errors.unauthenticated();
  };
  const options = { config: { access: { kind: 'open' as const } }, bodyLimit: BODY_LIMIT, onRequest: brokerOnly };

  app.post(
    BROKER_AUTHENTICATE_PATH,
    { ...options, schema: { hide: true, body: AuthenticateBody, response: { 200: Type.Object({ result: Result, is_superuser: Type.Boolean() }), ...errorsOf } } },
    async (request) => {
      const { username, clientid, password } = request.body;
      const gatewayId = gatewayIdOf(username);
      let result: Result = 'ignore';
      if (gatewayId === null) result = 'deny';
      else if (gatewayId !== undefined) {
        const checked = await checkGatewayCredentials(db, gatewayId, clientid, password);
        if (checked === 'refused') deps.refused(gatewayId);
        result = checked === 'valid' ? 'allow' : 'deny';
      }
      return { result, is_superuser: false };
    },
  );

  app.post(
    BROKER_AUTHORIZE_PATH,
    { ...options, schema: { hide: true, body: AuthorizeBody, response: { 200: Type.Object({ result: Result }), ...errorsOf } } },
    async (request) => {
      const { username, clientid, topic, action, qos, retain } = request.body;
      const gatewayId = gatewayIdOf(username);
      if (gatewayId === undefined) return { result: 'ignore' as const };
      const allowed =
        gatewayId !== null &&
        clientid === username &&
        (action === 'publish' ? mayPublish(gatewayId, topic) && publishFlagsAllowed(gatewayId, topic, qos, retain) : maySubscribe(gatewayId, topic)) &&
        // A deleted gateway's connection may outlive it on the broker: it may do nothing more.
        (await gatewayExists(db, gatewayId));
      return { result: allowed ? ('allow' as const) : ('deny' as const) };
    },
  );
}

/** QoS 2 is not part of the gateway protocol, and only a gateway's presence may be retained. */
function publishFlagsAllowed(gatewayId: number, topic: string, qos: number | string | undefined, retain: boolean | string | undefined): boolean {
  if (qos !== undefined && Number(qos) > 1) return false;
  return !(retain === true || retain === 'true') || topic === `${gatewayTopicPrefix(gatewayId)}presence`;
}
