// Authentication and ACL endpoints for brokers that ask over HTTP whom to let in (EMQX's HTTP authentication
// and authorization; see docs/brokers.md for the configuration). Request and answer follow EMQX 5: a JSON body
// with the client's user name, client id and password (or topic and action), answered `200 { result }` with
// `allow`, `deny` or `ignore`. The gateways' user names (`gateway-{id}`) are the service's to judge: allowed
// or denied. Every other user name is `ignore`d, so the broker's next source decides (the service's own user).
//
// The broker proves itself with `Authorization: Bearer {MQTT_HTTP_AUTH_SECRET}`. A client IP that presented a
// wrong secret 30 times in a minute is refused before its secret is even compared, until the window rolls.
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Database } from '../../platform/db/index.ts';
import { errors } from '../../platform/errors.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { FAILED_AUTH_PER_MINUTE, type RateLimits } from '../../platform/rate-limit.ts';
import { ErrorEnvelope } from '../../platform/schemas.ts';
import { hashToken, sameHash } from '../../platform/secrets.ts';
import { gatewayIdOf } from './broker-accounts.ts';
import { gatewayCredentialsValid, gatewayExists, mayPublish, maySubscribe } from './gateway-access.ts';

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
  },
  { additionalProperties: false },
);
const Result = Type.Union([Type.Literal('allow'), Type.Literal('deny'), Type.Literal('ignore')]);
type Result = 'allow' | 'deny' | 'ignore';
const errorsOf = { 400: ErrorEnvelope, 401: ErrorEnvelope, 413: ErrorEnvelope, 422: ErrorEnvelope, 429: ErrorEnvelope };

export function brokerAuthRoutes(app: ApiInstance, deps: { db: Database; limits: RateLimits; secret: string }): void {
  const { db, limits } = deps;
  const secretHash = hashToken(deps.secret);

  // Before the body is read: the lock-out first, then the secret, compared as hashes in constant time.
  const brokerOnly = async (request: FastifyRequest, _reply: FastifyReply) => {
    const lockout = await limits.isExhausted(FAILED_SECRET_BUCKET, request.ip, FAILED_AUTH_PER_MINUTE);
    if (lockout.exceeded) throw errors.rateLimited(lockout.retryAfterSeconds);
    const match = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
    if (!match || !sameHash(hashToken(match[1] as string), secretHash)) {
      await limits.consume(FAILED_SECRET_BUCKET, request.ip, FAILED_AUTH_PER_MINUTE);
      throw errors.unauthenticated();
    }
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
      else if (gatewayId !== undefined) result = (await gatewayCredentialsValid(db, gatewayId, clientid, password)) ? 'allow' : 'deny';
      return { result, is_superuser: false };
    },
  );

  app.post(
    BROKER_AUTHORIZE_PATH,
    { ...options, schema: { hide: true, body: AuthorizeBody, response: { 200: Type.Object({ result: Result }), ...errorsOf } } },
    async (request) => {
      const { username, clientid, topic, action } = request.body;
      const gatewayId = gatewayIdOf(username);
      if (gatewayId === undefined) return { result: 'ignore' as const };
      const allowed =
        gatewayId !== null &&
        clientid === username &&
        (action === 'publish' ? mayPublish(gatewayId, topic) : maySubscribe(gatewayId, topic)) &&
        // A deleted gateway's connection may outlive it on the broker: it may do nothing more.
        (await gatewayExists(db, gatewayId));
      return { result: allowed ? ('allow' as const) : ('deny' as const) };
    },
  );
}
