import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { Page } from '../../platform/pagination.ts';
import { ErrorEnvelope, Id, NoContent, errorResponses } from '../../platform/schemas.ts';
import { readScopes } from '../../platform/scopes.ts';
import { Invitation, InvitationCreated, InvitationListQuery, Key, KeyCreate, KeyListQuery, KeyUpdate, OperatorKeyCreate, ResendBody } from './schemas.ts';
import type { KeysArea } from './area.ts';

const IdParams = Type.Object({ id: Id() });
const read = { access: { kind: 'public' as const, scopes: readScopes('keys') } };
const write = { access: { kind: 'public' as const, scopes: ['keys:write' as const] } };
const writeErrors = { ...errorResponses, 409: ErrorEnvelope };

export function keysRoutes(app: ApiInstance, area: KeysArea): void {
  const { keys, invitations, handOver } = area;
  app.get(
    '/v1/keys',
    {
      config: read,
      schema: {
        tags: ['Keys'],
        summary: 'List keys in scope (phone keys, cards and fobs)',
        querystring: KeyListQuery,
        response: { 200: Page(Key), ...errorResponses },
      },
    },
    async (request) => keys.listKeys(callerOf(request), request.query),
  );

  app.post(
    '/v1/keys',
    {
      config: { ...write, idempotent: true },
      schema: {
        tags: ['Keys'],
        summary: 'Issue a key: an invitation whose setup link is sent by SMS, e-mail or both',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String()) }),
        body: KeyCreate,
        response: { 202: InvitationCreated, ...writeErrors },
      },
    },
    async (request, reply) => reply.code(202).send(await invitations.issue(callerOf(request), request.body)),
  );

  app.get(
    '/v1/keys/:id',
    { config: read, schema: { tags: ['Keys'], summary: 'Get a key', params: IdParams, response: { 200: Key, ...errorResponses } } },
    async (request) => keys.getKey(callerOf(request), request.params.id),
  );

  app.patch(
    '/v1/keys/:id',
    {
      config: write,
      schema: { tags: ['Keys'], summary: 'Change a key', params: IdParams, body: KeyUpdate, response: { 200: Key, ...writeErrors } },
    },
    async (request) => keys.updateKey(callerOf(request), request.params.id, request.body),
  );

  app.delete(
    '/v1/keys/:id',
    {
      config: write,
      schema: { tags: ['Keys'], summary: 'Revoke a key', params: IdParams, response: { 204: NoContent, ...writeErrors, 503: ErrorEnvelope } },
    },
    async (request, reply) => {
      await keys.revokeKey(callerOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/v1/invitations',
    {
      config: read,
      schema: {
        tags: ['Invitations'],
        summary: 'List invitations',
        querystring: InvitationListQuery,
        response: { 200: Page(Invitation), ...errorResponses },
      },
    },
    async (request) => invitations.listInvitations(callerOf(request), request.query),
  );

  app.get(
    '/v1/invitations/:id',
    { config: read, schema: { tags: ['Invitations'], summary: 'Get an invitation', params: IdParams, response: { 200: Invitation, ...errorResponses } } },
    async (request) => invitations.getInvitation(callerOf(request), request.params.id),
  );

  app.delete(
    '/v1/invitations/:id',
    {
      config: write,
      schema: { tags: ['Invitations'], summary: 'Cancel a pending invitation', params: IdParams, response: { 204: NoContent, ...writeErrors } },
    },
    async (request, reply) => {
      await invitations.cancelInvitation(callerOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/v1/invitations/:id/resend',
    {
      config: write,
      schema: {
        tags: ['Invitations'],
        summary: 'Send the setup link again',
        params: IdParams,
        body: ResendBody,
        response: { 202: Invitation, ...writeErrors },
      },
    },
    async (request, reply) => reply.code(202).send(await invitations.resend(callerOf(request), request.params.id, request.body?.channel)),
  );

  app.post(
    '/admin/v1/keys',
    {
      config: { access: { kind: 'admin' } },
      schema: { hide: true, body: OperatorKeyCreate, response: { 201: Key, 401: ErrorEnvelope, 422: ErrorEnvelope } },
    },
    async (request, reply) => reply.code(201).send(await handOver.createByOperator(request.body)),
  );

  app.post(
    '/admin/v1/keys/:id/return',
    {
      config: { access: { kind: 'admin' } },
      schema: { hide: true, params: IdParams, response: { 200: Key, 401: ErrorEnvelope, 404: ErrorEnvelope } },
    },
    async (request) => handOver.returnByOperator(request.params.id),
  );
}

/** POST /admin/v1/sandbox/locking_system/confirm (SANDBOX=true only). */
export function keysSandboxRoutes(app: ApiInstance, { keys }: KeysArea): void {
  app.post(
    '/admin/v1/sandbox/locking_system/confirm',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        hide: true,
        body: Type.Object({ account_id: Id() }, { additionalProperties: false }),
        response: { 200: Type.Object({ confirmed: Type.Integer() }), 401: ErrorEnvelope, 422: ErrorEnvelope },
      },
    },
    async (request) => ({ confirmed: await keys.confirmHeldChanges(request.body.account_id) }),
  );
}
