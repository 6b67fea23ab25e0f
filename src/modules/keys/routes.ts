import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { failures } from '../../platform/openapi-answers.ts';
import { named, ref } from '../../platform/openapi-schemas.ts';
import { sendSerialized } from '../../platform/page-cache.ts';
import { Id, NoContent } from '../../platform/schemas.ts';
import { readScopes } from '../../platform/scopes.ts';
import {
  Invitation,
  InvitationCreated,
  InvitationListQuery,
  InvitationPage,
  Key,
  KeyCreate,
  KeyListQuery,
  KeyPage,
  KeyUpdate,
  OperatorKey,
  OperatorKeyCreate,
  OperatorKeyUpdate,
  ResendBody,
} from './schemas.ts';
import type { KeysArea } from './area.ts';

const IdParams = Type.Object({ id: Id() });
const read = { access: { kind: 'public' as const, scopes: readScopes('keys') } };
const write = { access: { kind: 'public' as const, scopes: ['keys:write' as const] } };
const notFound = failures({ 404: ['not_found'] });

export function keysRoutes(app: ApiInstance, area: KeysArea): void {
  const { keys, invitations, handOver } = area;
  app.get(
    '/v1/keys',
    {
      config: read,
      schema: {
        operationId: 'listKeys',
        tags: ['Keys'],
        summary: 'List keys in scope (phone keys, cards and fobs)',
        description: 'Every access grant in scope, also cards and fobs managed elsewhere (`type` tells them apart); revoked keys are absent.',
        querystring: KeyListQuery,
        response: { 200: ref(KeyPage) },
      },
    },
    async (request, reply) => sendSerialized(reply, await keys.listJson(callerOf(request), request.query)),
  );

  app.post(
    '/v1/keys',
    {
      config: { ...write, idempotent: true },
      schema: {
        operationId: 'createKey',
        tags: ['Keys'],
        summary: 'Issue a key: an invitation whose setup link is sent by SMS, e-mail or both',
        description:
          'Answers 202 with the invitation, not a key: the key appears, `handed_over`, when the person activates the link. `key.issued` fires. 30 a minute per API key, shared with resend.',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: '1 to 64 of A-Z a-z 0-9 _ -; a retry with the same key and body gets the stored answer' })) }),
        body: ref(KeyCreate),
        response: {
          202: ref(InvitationCreated),
          ...failures({
            404: { not_found: "the person is not in the API key's scope" },
            409: ['idempotency_conflict', 'idempotency_in_progress'],
            422: {
              validation_failed: 'the body failed validation: among others `unknown_security_group` on `security_groups[i]`, `sms_disabled` on `channel`',
              entitlement_exceeded: "the account's phone-key allowance is used up",
            },
          }),
        },
      },
    },
    async (request, reply) => reply.code(202).send(await invitations.issue(callerOf(request), request.body)),
  );

  app.get(
    '/v1/keys/:id',
    {
      config: read,
      schema: { operationId: 'getKey', tags: ['Keys'], summary: 'Get a key', description: 'One key in scope; a revoked key answers 404.', params: IdParams, response: { 200: ref(Key), ...notFound } },
    },
    async (request) => keys.getKey(callerOf(request), request.params.id),
  );

  app.patch(
    '/v1/keys/:id',
    {
      config: write,
      schema: {
        operationId: 'updateKey',
        tags: ['Keys'],
        summary: 'Change a key',
        description: 'Changes name, security groups or validity; a change that alters nothing answers 200 without writing. On a physical fob only `name` can change.',
        params: IdParams,
        body: ref(KeyUpdate),
        response: {
          200: ref(Key),
          ...failures({
            404: ['not_found'],
            409: ['lockingsystem_rejected'],
            422: { validation_failed: 'the body failed validation: among others `unknown_security_group`, and `not_editable` on every field but `name` of a fob managed in the locking system' },
          }),
        },
      },
    },
    async (request) => keys.updateKey(callerOf(request), request.params.id, request.body),
  );

  app.delete(
    '/v1/keys/:id',
    {
      config: write,
      schema: {
        operationId: 'revokeKey',
        tags: ['Keys'],
        summary: 'Revoke a key',
        description: 'The key leaves every read at once and `key.revoked` fires; its removal from the locking system follows.',
        params: IdParams,
        response: {
          204: NoContent,
          ...failures({ 404: ['not_found'], 503: { not_available: 'key revocation is not enabled on this server (nothing changed)' } }),
        },
      },
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
        operationId: 'listInvitations',
        tags: ['Invitations'],
        summary: 'List invitations',
        description: 'Every invitation in scope, cancelled ones too.',
        querystring: InvitationListQuery,
        response: { 200: ref(InvitationPage), ...failures({ 422: { validation_failed: '`state` is not one of pending, activated, expired, cancelled' } }) },
      },
    },
    async (request) => invitations.listInvitations(callerOf(request), request.query),
  );

  app.get(
    '/v1/invitations/:id',
    {
      config: read,
      schema: { operationId: 'getInvitation', tags: ['Invitations'], summary: 'Get an invitation', description: 'One invitation in scope.', params: IdParams, response: { 200: ref(Invitation), ...notFound } },
    },
    async (request) => invitations.getInvitation(callerOf(request), request.params.id),
  );

  app.delete(
    '/v1/invitations/:id',
    {
      config: write,
      schema: {
        operationId: 'cancelInvitation',
        tags: ['Invitations'],
        summary: 'Cancel a pending invitation',
        description: 'Its setup link stops working and its waiting messages are withdrawn.',
        params: IdParams,
        response: { 204: NoContent, ...failures({ 404: ['not_found'], 409: ['invitation_not_pending'] }) },
      },
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
        operationId: 'resendInvitation',
        tags: ['Invitations'],
        summary: 'Send the setup link again',
        description: 'Makes a new setup link (the previous one stops working) and sends it; the body may be left out (channel `sms`). 30 a minute per API key, shared with `POST /keys`.',
        params: IdParams,
        body: ResendBody,
        response: {
          202: ref(Invitation, { description: 'The invitation, read again.' }),
          ...failures({
            404: ['not_found'],
            409: ['invitation_not_pending'],
            422: {
              validation_failed: '`sms_disabled` on `channel` for an account without SMS, or `invalid` on `channel` when the person has no phone number',
              entitlement_exceeded: "the account's phone-key allowance is used up",
            },
          }),
        },
      },
    },
    async (request, reply) => reply.code(202).send(await invitations.resend(callerOf(request), request.params.id, request.body?.channel)),
  );

  app.post(
    '/admin/v1/keys',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        operationId: 'handOverKey',
        tags: ['Keys'],
        summary: 'Hand a key over (dashboard)',
        description:
          'A card, fob or phone key handed over at once: 201 Key `handed_over`, `key.activated` fires. `credential` is what a card or fob presents at a reader; a phone key gets one of its own.',
        body: ref(OperatorKeyCreate),
        response: { 201: ref(OperatorKey), ...failures({ 422: ['validation_failed'] }) },
      },
    },
    async (request, reply) => reply.code(201).send(await handOver.createByOperator(request.body)),
  );

  app.get(
    '/admin/v1/keys/:id',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        operationId: 'getOperatorKey',
        tags: ['Keys'],
        summary: 'Get a key with its credential',
        description: 'A live key of any account, with the credential it presents (normalised).',
        params: IdParams,
        response: { 200: ref(OperatorKey), ...notFound },
      },
    },
    async (request) => handOver.getForOperator(request.params.id),
  );

  app.patch(
    '/admin/v1/keys/:id',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        operationId: 'setKeyCredential',
        tags: ['Keys'],
        summary: "Change a key's credential",
        description:
          'A new credential (null: none), unique among the keys of the account in use. The key reads `sent` until every gateway holding it has applied the change, then `handed_over` again with `key.activated`.',
        params: IdParams,
        body: ref(OperatorKeyUpdate),
        response: { 200: ref(OperatorKey), ...failures({ 404: ['not_found'], 422: ['validation_failed'] }) },
      },
    },
    async (request) => handOver.setCredential(request.params.id, request.body),
  );

  app.post(
    '/admin/v1/keys/:id/return',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        operationId: 'returnKey',
        tags: ['Keys'],
        summary: 'Take a key back',
        description: 'The key stays listed with state `returned`; `key.revoked` fires. Its credential may be given to another key.',
        params: IdParams,
        response: { 200: ref(OperatorKey), ...notFound },
      },
    },
    async (request) => handOver.returnByOperator(request.params.id),
  );
}

const ConfirmBody = named('LockingSystemConfirm', Type.Object({ account_id: Id() }, { additionalProperties: false, description: 'The account whose held key changes to confirm.' }));
const Confirmed = named('LockingSystemConfirmed', Type.Object({ confirmed: Type.Integer({ description: 'key changes confirmed' }) }));

/** POST /admin/v1/sandbox/locking_system/confirm (SANDBOX=true only). */
export function keysSandboxRoutes(app: ApiInstance, { keys }: KeysArea): void {
  app.post(
    '/admin/v1/sandbox/locking_system/confirm',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        operationId: 'confirmSandboxKeyChanges',
        tags: ['Sandbox'],
        summary: 'Confirm held key changes',
        description: 'Every key change the simulator holds (mode `hold`) goes from `sent` to `handed_over`, with `key.activated`.',
        body: ref(ConfirmBody),
        response: { 200: ref(Confirmed), ...failures({ 422: ['validation_failed'] }) },
      },
    },
    async (request) => ({ confirmed: await keys.confirmHeldChanges(request.body.account_id) }),
  );
}
