import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { failures } from '../../platform/openapi-answers.ts';
import { ref } from '../../platform/openapi-schemas.ts';
import { sendSerialized } from '../../platform/page-cache.ts';
import { NoContent } from '../../platform/schemas.ts';
import { readScopes } from '../../platform/scopes.ts';
import {
  OperatorPersonCreate,
  Person,
  PersonCreate,
  PersonListQuery,
  PersonPage,
  PersonSearchQuery,
  PersonUpdate,
  PersonWithKeys,
} from './schemas.ts';
import type { PeopleService } from './service.ts';

const IdParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
const read = { access: { kind: 'public' as const, scopes: readScopes('people') } };
const write = { access: { kind: 'public' as const, scopes: ['people:write' as const] } };
const tags = ['People'];
const personRules =
  'the body failed validation: among others `unknown_field`, `reserved_name` on `name`, `invalid` on `phone` (not international) or on `location_id` (not in scope)';
const IdempotencyKey = Type.Object({
  'idempotency-key': Type.Optional(Type.String({ description: '1 to 64 of A-Z a-z 0-9 _ -; a retry with the same key and body gets the stored answer' })),
});

export function peopleRoutes(app: ApiInstance, people: PeopleService): void {
  app.get(
    '/v1/people',
    {
      config: read,
      schema: {
        operationId: 'listPeople',
        tags,
        summary: 'List people',
        description: 'The people in scope, in creation order; `email` and `phone` find one person.',
        querystring: PersonListQuery,
        response: { 200: ref(PersonPage) },
      },
    },
    async (request, reply) => sendSerialized(reply, await people.listJson(callerOf(request), request.query)),
  );

  app.post(
    '/v1/people',
    {
      config: { ...write, idempotent: true },
      schema: {
        operationId: 'createPerson',
        tags,
        summary: 'Create a person (idempotent on phone and e-mail)',
        description:
          'A person in scope with the same phone or e-mail is answered with 200 and not changed; otherwise the person is made (201) and `person.created` fires.',
        headers: IdempotencyKey,
        body: ref(PersonCreate),
        response: {
          200: ref(Person, { description: 'An existing person with the same phone or e-mail, unchanged.' }),
          201: ref(Person, { description: 'The new person.' }),
          ...failures({
            409: ['lockingsystem_rejected', 'idempotency_conflict', 'idempotency_in_progress'],
            422: { validation_failed: personRules },
          }),
        },
      },
    },
    async (request, reply) => {
      const { person, created } = await people.create(callerOf(request), request.body, request.log);
      return reply.code(created ? 201 : 200).send(person);
    },
  );

  app.get(
    '/v1/people/:id',
    {
      config: read,
      schema: {
        operationId: 'getPerson',
        tags,
        summary: 'Get a person and their keys',
        description: 'The person with the keys they hold inside the API key\'s scope.',
        params: IdParams,
        response: { 200: ref(PersonWithKeys), ...failures({ 404: ['not_found'] }) },
      },
    },
    async (request) => people.get(callerOf(request), request.params.id),
  );

  app.put(
    '/v1/people/:id',
    {
      config: write,
      schema: {
        operationId: 'updatePerson',
        tags,
        summary: 'Update a person (only the fields sent change)',
        description: 'Emits `person.updated` with the changed fields; a request that changes nothing answers 200 and sends nothing.',
        params: IdParams,
        body: ref(PersonUpdate),
        response: {
          200: ref(Person),
          ...failures({ 403: ['forbidden'], 404: ['not_found'], 409: ['lockingsystem_rejected'], 422: { validation_failed: personRules } }),
        },
      },
    },
    async (request) => people.update(callerOf(request), request.params.id, request.body),
  );

  app.delete(
    '/v1/people/:id',
    {
      config: write,
      schema: {
        operationId: 'deletePerson',
        tags,
        summary: 'Delete a person',
        description: 'A soft delete: the person leaves every read, their keys are revoked and pending invitations cancelled, the payloads of webhook deliveries about them are purged, and `person.deleted` fires.',
        params: IdParams,
        response: { 204: NoContent, ...failures({ 403: ['forbidden'], 404: ['not_found'], 409: ['lockingsystem_rejected'] }) },
      },
    },
    async (request, reply) => {
      await people.delete(callerOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/admin/v1/people',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        operationId: 'searchPeople',
        tags: ['People'],
        summary: "Search an account's people",
        description: '`q` is found in the name or the e-mail (case-insensitive) or, with digits, in the phone; in id order.',
        querystring: PersonSearchQuery,
        response: { 200: ref(PersonPage), ...failures({ 404: ['not_found'] }) },
      },
    },
    async (request) => people.search(request.query),
  );

  app.post(
    '/admin/v1/people',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        operationId: 'createOperatorPerson',
        tags: ['People'],
        summary: 'Create a person (no de-duplication)',
        description: 'Like the public create at any location, plus `managed`; emits `person.created`.',
        body: ref(OperatorPersonCreate),
        response: { 201: ref(Person), ...failures({ 409: ['lockingsystem_rejected'], 422: ['validation_failed'] }) },
      },
    },
    async (request, reply) => reply.code(201).send(await people.createByOperator(request.body, request.log)),
  );
}
