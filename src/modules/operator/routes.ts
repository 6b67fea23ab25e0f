// The operator API (/admin/v1), behind ADMIN_TOKEN. Hidden from the public OpenAPI document.
import { Type } from '@sinclair/typebox';
import type { ApiInstance } from '../../platform/fastify.ts';
import { Page, PageQuery, pageRequest } from '../../platform/pagination.ts';
import { ErrorEnvelope, Id, NoContent } from '../../platform/schemas.ts';
import { Lock, SecurityGroup } from '../catalog/schemas.ts';
import {
  Account,
  AccountCreate,
  AccountUpdate,
  ApiKey,
  ApiKeyCreate,
  ApiKeyWithToken,
  Gateway,
  GatewayCreate,
  GatewaySummary,
  Location,
  LocationCreate,
  LockCreate,
  SecurityGroupCreate,
  User,
  UserCreate,
} from './schemas.ts';
import type { OperatorService } from './service.ts';

const IdParams = Type.Object({ id: Id() });
const errorsOf = { 400: ErrorEnvelope, 401: ErrorEnvelope, 404: ErrorEnvelope, 422: ErrorEnvelope };
const admin = { access: { kind: 'admin' as const } };
const hidden = { hide: true, tags: ['Operator'] };

export function operatorRoutes(app: ApiInstance, operator: OperatorService): void {
  app.post('/admin/v1/accounts', { config: admin, schema: { ...hidden, body: AccountCreate, response: { 201: Account, ...errorsOf } } },
    async (request, reply) => reply.code(201).send(await operator.accounts.create(request.body)));

  app.get('/admin/v1/accounts/:id', { config: admin, schema: { ...hidden, params: IdParams, response: { 200: Account, ...errorsOf } } },
    async (request) => operator.accounts.get(request.params.id));

  app.patch('/admin/v1/accounts/:id',
    { config: admin, schema: { ...hidden, params: IdParams, body: AccountUpdate, response: { 200: Account, ...errorsOf } } },
    async (request) => operator.accounts.update(request.params.id, request.body));

  app.post('/admin/v1/locations', { config: admin, schema: { ...hidden, body: LocationCreate, response: { 201: Location, ...errorsOf } } },
    async (request, reply) => reply.code(201).send(await operator.accounts.createLocation(request.body)));

  app.post('/admin/v1/users', { config: admin, schema: { ...hidden, body: UserCreate, response: { 201: User, ...errorsOf } } },
    async (request, reply) => reply.code(201).send(await operator.accounts.createUser(request.body)));

  app.post('/admin/v1/api_keys', { config: admin, schema: { ...hidden, body: ApiKeyCreate, response: { 201: ApiKeyWithToken, ...errorsOf } } },
    async (request, reply) => reply.code(201).send(await operator.apiKeys.create(request.body)));

  app.get('/admin/v1/api_keys',
    {
      config: admin,
      schema: {
        ...hidden,
        querystring: Type.Object({ ...PageQuery, location_id: Type.Optional(Id()) }),
        response: { 200: Page(ApiKey), ...errorsOf },
      },
    },
    async (request) => operator.apiKeys.list(pageRequest(request.query), request.query.location_id));

  app.delete('/admin/v1/api_keys/:id', { config: admin, schema: { ...hidden, params: IdParams, response: { 204: NoContent, ...errorsOf } } },
    async (request, reply) => {
      await operator.apiKeys.revoke(request.params.id);
      return reply.code(204).send(null);
    });

  app.post('/admin/v1/security_groups',
    { config: admin, schema: { ...hidden, body: SecurityGroupCreate, response: { 201: SecurityGroup, ...errorsOf } } },
    async (request, reply) => reply.code(201).send(await operator.locks.createSecurityGroup(request.body)));

  app.post('/admin/v1/gateways', { config: admin, schema: { ...hidden, body: GatewayCreate, response: { 201: Gateway, ...errorsOf, 503: ErrorEnvelope } } },
    async (request, reply) => reply.code(201).send(await operator.gateways.create(request.body)));

  app.get('/admin/v1/gateways',
    {
      config: admin,
      schema: {
        ...hidden,
        querystring: Type.Object({ ...PageQuery, location_id: Type.Optional(Id()) }),
        response: { 200: Page(GatewaySummary), ...errorsOf },
      },
    },
    async (request) => operator.gateways.list(pageRequest(request.query), request.query.location_id));

  app.get('/admin/v1/gateways/:id', { config: admin, schema: { ...hidden, params: IdParams, response: { 200: GatewaySummary, ...errorsOf } } },
    async (request) => operator.gateways.get(request.params.id));

  app.post('/admin/v1/gateways/:id/rotate_password',
    { config: admin, schema: { ...hidden, params: IdParams, response: { 200: Gateway, ...errorsOf, 503: ErrorEnvelope } } },
    async (request) => operator.gateways.rotatePassword(request.params.id));

  app.delete('/admin/v1/gateways/:id',
    { config: admin, schema: { ...hidden, params: IdParams, response: { 204: NoContent, ...errorsOf, 409: ErrorEnvelope, 503: ErrorEnvelope } } },
    async (request, reply) => {
      await operator.gateways.delete(request.params.id);
      return reply.code(204).send(null);
    });

  app.post('/admin/v1/locks', { config: admin, schema: { ...hidden, body: LockCreate, response: { 201: Lock, ...errorsOf } } },
    async (request, reply) => reply.code(201).send(await operator.locks.create(request.body)));
}
