// The operator API (/admin/v1), behind ADMIN_TOKEN; described by its own document (GET /admin/v1/openapi.json).
import { Type } from '@sinclair/typebox';
import type { ApiInstance } from '../../platform/fastify.ts';
import { failures } from '../../platform/openapi-answers.ts';
import { ref } from '../../platform/openapi-schemas.ts';
import { PageQuery, pageRequest } from '../../platform/pagination.ts';
import { Id, NoContent } from '../../platform/schemas.ts';
import { OperatorLock, OperatorLockPage } from '../catalog/schemas.ts';
import {
  Account,
  AccountCreate,
  AccountPage,
  AccountUpdate,
  ApiKeyCreate,
  ApiKeyPage,
  ApiKeyWithToken,
  Gateway,
  GatewayCreate,
  GatewayPage,
  GatewaySummary,
  Location,
  LocationCreate,
  LocationPage,
  LocationUpdate,
  LockCreate,
  LockUpdate,
  OperatorSecurityGroup,
  OperatorSecurityGroupPage,
  Overview,
  SecurityGroupCreate,
  SecurityGroupUpdate,
  User,
  UserCreate,
  UserPage,
} from './schemas.ts';
import type { OperatorService } from './service.ts';

const IdParams = Type.Object({ id: Id() });
const admin = { access: { kind: 'admin' as const } };
const invalid = failures({ 422: ['validation_failed'] });
const notFound = failures({ 404: ['not_found'] });
const brokerDown = { broker_unavailable: 'the MQTT broker in front could not be updated; nothing was changed' };
const ListQuery = Type.Object({
  ...PageQuery,
  location_id: Type.Optional(Id({ description: 'only those of this location' })),
  account_id: Type.Optional(Id({ description: 'only those of this account (every location of it)' })),
});
const GatewaysQuery = Type.Object({
  ...ListQuery.properties,
  online: Type.Optional(Type.Boolean({ description: 'only those online (true) or offline (false): the overview\'s offline gateways, across accounts' })),
});
const OfAccountQuery = Type.Object({ ...PageQuery, account_id: Id({ description: 'the account' }) });
const AccountsQuery = Type.Object({ ...PageQuery, q: Type.Optional(Type.String({ maxLength: 200, description: 'the name contains this, case-insensitive' })) });

export function operatorRoutes(app: ApiInstance, operator: OperatorService): void {
  const tags = ['Accounts'];
  app.post('/admin/v1/accounts',
    { config: admin, schema: { operationId: 'createAccount', tags, summary: 'Create an account', description: 'An account with its root location.', body: ref(AccountCreate), response: { 201: ref(Account), ...invalid } } },
    async (request, reply) => reply.code(201).send(await operator.accounts.create(request.body)));

  app.get('/admin/v1/overview',
    { config: admin, schema: { operationId: 'getOverview', tags, summary: 'What needs attention', description: 'Counts across every account: gateways and locks offline, webhooks failing or paused, deliveries pending.', response: { 200: ref(Overview) } } },
    async () => operator.accounts.overview());

  app.get('/admin/v1/accounts',
    { config: admin, schema: { operationId: 'listAccounts', tags, summary: 'List accounts', description: 'In creation order; `q` filters by name.', querystring: AccountsQuery, response: { 200: ref(AccountPage) } } },
    async (request) => operator.accounts.list(pageRequest(request.query, 'op.accounts'), request.query.q));

  app.get('/admin/v1/accounts/:id',
    { config: admin, schema: { operationId: 'getAccount', tags, summary: 'Get an account', description: 'One account with its root location.', params: IdParams, response: { 200: ref(Account), ...notFound } } },
    async (request) => operator.accounts.get(request.params.id));

  app.patch('/admin/v1/accounts/:id',
    {
      config: admin,
      schema: { operationId: 'updateAccount', tags, summary: 'Change an account', description: 'Only the fields sent change; at least one.', params: IdParams, body: ref(AccountUpdate), response: { 200: ref(Account), ...failures({ 404: ['not_found'], 422: ['validation_failed'] }) } },
    },
    async (request) => operator.accounts.update(request.params.id, request.body));

  app.post('/admin/v1/locations',
    { config: admin, schema: { operationId: 'createLocation', tags, summary: 'Create a department', description: 'A location under `parent_id` (an unknown parent: 422 on `parent_id`).', body: ref(LocationCreate), response: { 201: ref(Location), ...invalid } } },
    async (request, reply) => reply.code(201).send(await operator.accounts.createLocation(request.body)));

  app.patch('/admin/v1/locations/:id',
    {
      config: admin,
      schema: {
        operationId: 'updateLocation', tags, summary: 'Change a location',
        description: 'Rename it, or set its time zone (an IANA name; null: its parent\'s). Its doors read their security groups\' windows in it; gateways holding them get the change.',
        params: IdParams, body: ref(LocationUpdate), response: { 200: ref(Location), ...failures({ 404: ['not_found'], 422: ['validation_failed'] }) },
      },
    },
    async (request) => operator.accounts.updateLocation(request.params.id, request.body));

  app.get('/admin/v1/locations',
    { config: admin, schema: { operationId: 'listLocations', tags, summary: "List an account's locations", description: 'The root and every department, a parent before its children.', querystring: OfAccountQuery, response: { 200: ref(LocationPage), ...notFound } } },
    async (request) => operator.accounts.listLocations(request.query.account_id, pageRequest(request.query, 'op.locations')));

  app.get('/admin/v1/users',
    { config: admin, schema: { operationId: 'listUsers', tags, summary: "List an account's dashboard users", description: 'In creation order.', querystring: OfAccountQuery, response: { 200: ref(UserPage), ...notFound } } },
    async (request) => operator.accounts.listUsers(request.query.account_id, pageRequest(request.query, 'op.users')));

  app.post('/admin/v1/users',
    { config: admin, schema: { operationId: 'createUser', tags, summary: 'Create a dashboard user', description: 'A dashboard user of an account (e-mailed when its API keys\' webhooks auto-pause).', body: ref(UserCreate), response: { 201: ref(User), ...invalid } } },
    async (request, reply) => reply.code(201).send(await operator.accounts.createUser(request.body)));

  const keyTags = ['API keys'];
  app.post('/admin/v1/api_keys',
    {
      config: admin,
      schema: { operationId: 'createApiKey', tags: keyTags, summary: 'Create an API key', description: 'The token is shown only in this answer; `lock_allowlist` must name locks in the key\'s scope.', body: ref(ApiKeyCreate), response: { 201: ref(ApiKeyWithToken), ...invalid } },
    },
    async (request, reply) => reply.code(201).send(await operator.apiKeys.create(request.body)));

  app.get('/admin/v1/api_keys',
    { config: admin, schema: { operationId: 'listApiKeys', tags: keyTags, summary: 'List API keys', description: 'Never with the token.', querystring: ListQuery, response: { 200: ref(ApiKeyPage) } } },
    async (request) => operator.apiKeys.list(pageRequest(request.query, 'op.api_keys'), { locationId: request.query.location_id, accountId: request.query.account_id }));

  app.delete('/admin/v1/api_keys/:id',
    { config: admin, schema: { operationId: 'revokeApiKey', tags: keyTags, summary: 'Revoke an API key', description: 'Its token answers 401 at once on every instance.', params: IdParams, response: { 204: NoContent, ...notFound } } },
    async (request, reply) => {
      await operator.apiKeys.revoke(request.params.id);
      return reply.code(204).send(null);
    });

  app.post('/admin/v1/security_groups',
    {
      config: admin,
      schema: {
        operationId: 'createSecurityGroup', tags: ['Locks'], summary: 'Create a security group',
        description: '`code` is unique per location (422 on `code` otherwise). `windows`: weekly windows in each door\'s time zone; absent or null: at any time.',
        body: ref(SecurityGroupCreate), response: { 201: ref(OperatorSecurityGroup), ...invalid },
      },
    },
    async (request, reply) => reply.code(201).send(await operator.locks.createSecurityGroup(request.body)));

  app.get('/admin/v1/security_groups',
    { config: admin, schema: { operationId: 'listSecurityGroups', tags: ['Locks'], summary: "List an account's security groups", description: 'Every location of the account, with windows.', querystring: OfAccountQuery, response: { 200: ref(OperatorSecurityGroupPage), ...notFound } } },
    async (request) => operator.locks.listSecurityGroups(request.query.account_id, pageRequest(request.query, 'op.security_groups')));

  app.patch('/admin/v1/security_groups/:id',
    {
      config: admin,
      schema: {
        operationId: 'updateSecurityGroup', tags: ['Locks'], summary: 'Change a security group',
        description: 'Title, description, `is_default` or `windows` (null: at any time). New windows reach the gateways holding its doors as a change.',
        params: IdParams, body: ref(SecurityGroupUpdate), response: { 200: ref(OperatorSecurityGroup), ...failures({ 404: ['not_found'], 422: ['validation_failed'] }) },
      },
    },
    async (request) => operator.locks.updateSecurityGroup(request.params.id, request.body));

  const gatewayTags = ['Gateways'];
  app.post('/admin/v1/gateways',
    {
      config: admin,
      schema: {
        operationId: 'createGateway', tags: gatewayTags, summary: 'Create a gateway',
        description: 'Its MQTT credentials; the password is shown only in this answer and stored hashed.',
        body: ref(GatewayCreate), response: { 201: ref(Gateway), ...failures({ 422: ['validation_failed'], 503: brokerDown }) },
      },
    },
    async (request, reply) => reply.code(201).send(await operator.gateways.create(request.body)));

  app.get('/admin/v1/gateways',
    { config: admin, schema: { operationId: 'listGateways', tags: gatewayTags, summary: 'List gateways', description: 'With `online` and `last_seen_at`; never the password.', querystring: GatewaysQuery, response: { 200: ref(GatewayPage) } } },
    async (request) =>
      operator.gateways.list(pageRequest(request.query, 'op.gateways'), { locationId: request.query.location_id, accountId: request.query.account_id }, request.query.online));

  app.get('/admin/v1/gateways/:id',
    { config: admin, schema: { operationId: 'getGateway', tags: gatewayTags, summary: 'Get a gateway', description: 'The fields of the list; never the password.', params: IdParams, response: { 200: ref(GatewaySummary), ...notFound } } },
    async (request) => operator.gateways.get(request.params.id));

  app.post('/admin/v1/gateways/:id/rotate_password',
    {
      config: admin,
      schema: {
        operationId: 'rotateGatewayPassword', tags: gatewayTags, summary: "Rotate a gateway's password",
        description: 'A new password, shown only here; the old one is refused and its live connection dropped. The gateway reads offline until it says online.',
        params: IdParams, response: { 200: ref(Gateway), ...failures({ 404: ['not_found'], 503: brokerDown }) },
      },
    },
    async (request) => operator.gateways.rotatePassword(request.params.id));

  app.delete('/admin/v1/gateways/:id',
    {
      config: admin,
      schema: {
        operationId: 'deleteGateway', tags: gatewayTags, summary: 'Delete a gateway',
        description: 'The row and its broker account go together; refused while locks, the access log or lock commands refer to it.',
        params: IdParams, response: { 204: NoContent, ...failures({ 404: ['not_found'], 409: ['gateway_in_use'], 503: brokerDown }) },
      },
    },
    async (request, reply) => {
      await operator.gateways.delete(request.params.id);
      return reply.code(204).send(null);
    });

  app.post('/admin/v1/locks',
    {
      config: admin,
      schema: { operationId: 'createLock', tags: ['Locks'], summary: 'Create a lock', description: '`gateway_id` makes it remote; `security_groups` are codes of its location or above.', body: ref(LockCreate), response: { 201: ref(OperatorLock), ...invalid } },
    },
    async (request, reply) => reply.code(201).send(await operator.locks.create(request.body)));

  app.get('/admin/v1/locks',
    { config: admin, schema: { operationId: 'listLocks', tags: ['Locks'], summary: 'List locks', description: 'Every lock, or those of an account (`account_id`) or at a location and below (`location_id`), as the public API shows them, with `gateway_id`.', querystring: ListQuery, response: { 200: ref(OperatorLockPage), ...notFound } } },
    async (request) => operator.locks.list(pageRequest(request.query, 'op.locks'), { locationId: request.query.location_id, accountId: request.query.account_id }));

  app.patch('/admin/v1/locks/:id',
    {
      config: admin,
      schema: {
        operationId: 'updateLock', tags: ['Locks'], summary: 'Change a lock',
        description: 'Put it on a gateway of its account (or off it: `gateway_id: null`), rename it, replace its security groups (codes of its location or above).',
        params: IdParams, body: ref(LockUpdate), response: { 200: ref(OperatorLock), ...failures({ 404: ['not_found'], 422: ['validation_failed'] }) },
      },
    },
    async (request) => operator.locks.update(request.params.id, request.body));
}
