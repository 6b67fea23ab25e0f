// /admin/v1/controllers: UHPPOTE controllers, behind ADMIN_TOKEN (README "Real controllers").
import { Type } from '@sinclair/typebox';
import type { ApiInstance } from '../../platform/fastify.ts';
import { failures } from '../../platform/openapi-answers.ts';
import { ref } from '../../platform/openapi-schemas.ts';
import { PageQuery, pageRequest } from '../../platform/pagination.ts';
import { Id, NoContent } from '../../platform/schemas.ts';
import { Controller, ControllerCreate, ControllerPage, ControllerUpdate, Reconciliation } from './schemas.ts';
import type { ControllersService } from './service.ts';

const IdParams = Type.Object({ id: Id() });
const admin = { access: { kind: 'admin' as const } };
const tags = ['Controllers'];
const ListQuery = Type.Object({
  ...PageQuery,
  location_id: Type.Optional(Id({ description: 'only those at this location or below' })),
  account_id: Type.Optional(Id({ description: 'only those of this account' })),
});

export function controllerRoutes(app: ApiInstance, controllers: ControllersService): void {
  app.post(
    '/admin/v1/controllers',
    {
      config: admin,
      schema: {
        operationId: 'createController', tags, summary: 'Set up a UHPPOTE controller',
        description: 'A board by serial number and address, its doors mapped to locks. The account must have `locking_system: "uhppote"`. It is polled at once: clock set, event listener set, presence known.',
        body: ref(ControllerCreate),
        response: { 201: ref(Controller), ...failures({ 422: ['validation_failed'] }) },
      },
    },
    async (request, reply) => reply.code(201).send(await controllers.create(request.body)),
  );
  app.get(
    '/admin/v1/controllers',
    { config: admin, schema: { operationId: 'listControllers', tags, summary: 'List controllers', description: 'With presence, clock, listener and the last reconciliation.', querystring: ListQuery, response: { 200: ref(ControllerPage) } } },
    async (request) => controllers.list(pageRequest(request.query, 'op.controllers'), { accountId: request.query.account_id, locationId: request.query.location_id }),
  );
  app.get(
    '/admin/v1/controllers/:id',
    { config: admin, schema: { operationId: 'getController', tags, summary: 'Get a controller', description: 'The fields of the list.', params: IdParams, response: { 200: ref(Controller), ...failures({ 404: ['not_found'] }) } } },
    async (request) => controllers.get(request.params.id),
  );
  app.patch(
    '/admin/v1/controllers/:id',
    {
      config: admin,
      schema: {
        operationId: 'updateController', tags, summary: 'Change a controller',
        description: "Rename it, change its address, or map its doors anew (`door_locks` replaces the mapping; locks taken off are no longer remote). A new mapping rewrites the cards of the account's keys on it.",
        params: IdParams, body: ref(ControllerUpdate),
        response: { 200: ref(Controller), ...failures({ 404: ['not_found'], 422: ['validation_failed'] }) },
      },
    },
    async (request) => controllers.update(request.params.id, request.body),
  );
  app.delete(
    '/admin/v1/controllers/:id',
    {
      config: admin,
      schema: {
        operationId: 'deleteController', tags, summary: 'Delete a controller',
        description:
          'Refused (409 gateway_in_use) while locks are on its doors, the access log names it, or cards Latchkey wrote are still on the board (it did not answer when its doors were emptied; they come off when it answers). Its card list on the board is otherwise left as it is.',
        params: IdParams,
        querystring: Type.Object({
          force: Type.Optional(
            Type.Boolean({ description: 'delete it although cards Latchkey wrote may still be on the board: only for a board gone for good (broken, replaced), whose cards can open nothing' }),
          ),
        }),
        response: { 204: NoContent, ...failures({ 404: ['not_found'], 409: ['gateway_in_use'] }) },
      },
    },
    async (request, reply) => {
      await controllers.delete(request.params.id, { force: request.query.force === true });
      return reply.code(204).send(null);
    },
  );
  app.post(
    '/admin/v1/controllers/:id/reconcile',
    {
      config: admin,
      schema: {
        operationId: 'reconcileController', tags, summary: 'Reconcile a controller now',
        description: "Reads the board's card list, repairs what differs from what Latchkey holds, and answers what was added, changed or removed and why (also kept as `reconciliation`). 503 when the board does not answer.",
        params: IdParams, response: { 200: ref(Reconciliation), ...failures({ 404: ['not_found'], 503: ['not_available'] }) },
      },
    },
    async (request) => controllers.reconcile(request.params.id),
  );
}
