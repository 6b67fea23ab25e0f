import { Type } from '@sinclair/typebox';
import { callerOf } from '../../platform/access.ts';
import type { ApiInstance } from '../../platform/fastify.ts';
import { Page, PageQuery } from '../../platform/pagination.ts';
import { ErrorEnvelope, NoContent, errorResponses } from '../../platform/schemas.ts';
import { readScopes } from '../../platform/scopes.ts';
import { OperatorPersonCreate, Person, PersonCreate, PersonUpdate, PersonWithKeys } from './schemas.ts';
import type { PeopleService } from './service.ts';

const IdParams = Type.Object({ id: Type.String({ format: 'uuid' }) });
const read = { access: { kind: 'public' as const, scopes: readScopes('people') } };
const write = { access: { kind: 'public' as const, scopes: ['people:write' as const] } };
const tags = ['People'];
const writeErrors = { ...errorResponses, 409: ErrorEnvelope };

export function peopleRoutes(app: ApiInstance, people: PeopleService): void {
  app.get(
    '/v1/people',
    {
      config: read,
      schema: {
        tags,
        summary: 'List people',
        querystring: Type.Object({
          ...PageQuery,
          email: Type.Optional(Type.String({ maxLength: 254, description: 'exact, case-insensitive' })),
          phone: Type.Optional(Type.String({ maxLength: 40, description: 'any international format; normalised before matching' })),
        }),
        response: { 200: Page(Person), ...errorResponses },
      },
    },
    async (request) => people.list(callerOf(request), request.query),
  );

  app.post(
    '/v1/people',
    {
      config: { ...write, idempotent: true },
      schema: {
        tags,
        summary: 'Create a person (idempotent on phone and e-mail)',
        headers: Type.Object({ 'idempotency-key': Type.Optional(Type.String({ description: '1 to 64 of A-Z a-z 0-9 _ -' })) }),
        body: PersonCreate,
        response: { 200: Person, 201: Person, ...writeErrors },
      },
    },
    async (request, reply) => {
      const { person, created } = await people.create(callerOf(request), request.body);
      return reply.code(created ? 201 : 200).send(person);
    },
  );

  app.get(
    '/v1/people/:id',
    {
      config: read,
      schema: { tags, summary: 'Get a person and their keys', params: IdParams, response: { 200: PersonWithKeys, ...errorResponses } },
    },
    async (request) => people.get(callerOf(request), request.params.id),
  );

  app.put(
    '/v1/people/:id',
    {
      config: write,
      schema: { tags, summary: 'Update a person (only the fields sent change)', params: IdParams, body: PersonUpdate, response: { 200: Person, ...writeErrors } },
    },
    async (request) => people.update(callerOf(request), request.params.id, request.body),
  );

  app.delete(
    '/v1/people/:id',
    {
      config: write,
      schema: { tags, summary: 'Delete a person', params: IdParams, response: { 204: NoContent, ...writeErrors } },
    },
    async (request, reply) => {
      await people.delete(callerOf(request), request.params.id);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/admin/v1/people',
    {
      config: { access: { kind: 'admin' } },
      schema: {
        hide: true,
        body: OperatorPersonCreate,
        response: { 201: Person, 401: ErrorEnvelope, 409: ErrorEnvelope, 422: ErrorEnvelope },
      },
    },
    async (request, reply) => reply.code(201).send(await people.createByOperator(request.body)),
  );
}
