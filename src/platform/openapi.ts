// The two OpenAPI 3.1 documents, built by @fastify/swagger from the route schemas: the public API's at
// GET /v1/openapi.json (no token) and the operator API's at GET /admin/v1/openapi.json (ADMIN_TOKEN). One
// instance each (its `decorator` option), each keeping the routes of its kind of access. Named schemas
// (openapi-schemas.ts) become components.schemas; each document keeps the ones it uses.
import swagger, { type SwaggerOptions, type SwaggerTransform, type SwaggerTransformObject } from '@fastify/swagger';
import type { FastifyInstance } from 'fastify';
import { finishDocument } from './openapi-finish.ts';
import { namedSchemas } from './openapi-schemas.ts';
import { SCOPES } from './scopes.ts';
import type { RouteAccess } from './access.ts';

declare module 'fastify' {
  interface FastifyInstance {
    operatorSwagger(): Record<string, unknown>;
  }
}

export interface DocumentSettings {
  /** PUBLIC_URL: the default of the documents' server. */
  publicUrl: string;
  version: string;
  brandName: string;
}

const SCOPE_GRANTS: Record<(typeof SCOPES)[number], string> = {
  'catalog:read': 'GET /locks, GET /locks/{id}, GET /security_groups',
  'people:read': 'GET /people, GET /people/{id}',
  'people:write': 'POST, PUT, DELETE on /people, plus everything people:read grants',
  'keys:read': 'GET /keys, GET /keys/{id}, GET /invitations, GET /invitations/{id}',
  'keys:write': 'POST /keys, PATCH and DELETE on /keys/{id}, POST /invitations/{id}/resend, DELETE /invitations/{id}, plus everything keys:read grants',
  'locks:control': "POST /locks/{id}/unlock and GET /locks/{id}/commands/{command_id}, for locks on the key's allowlist",
  'events:read': 'GET /events',
  'webhooks:manage': 'every /webhooks operation',
};

const PUBLIC_DESCRIPTION = `Access control for physical doors: people, keys and their setup links, locks and security groups, remote unlocks, the access log and webhooks.

Every request carries \`Authorization: Bearer <API key>\`; a key sees its location and that location's departments, and rows elsewhere answer 404. Each operation lists the scopes it accepts (any one of them).

Every answer carries \`Cache-Control: no-store, private\` and \`X-Request-Id\`; every answer that is not a success is the \`Error\` envelope. A known path called with a method it does not have answers \`405 invalid_request\` with an \`Allow\` header; an unknown path \`404 not_found\`.`;

const OPERATOR_DESCRIPTION = `Provisioning for operators and the dashboard: accounts, departments, dashboard users, API keys, security groups, locks, gateways, service-managed people, handed-over keys, and the sandbox (its paths exist only with \`SANDBOX=true\`).

Every request carries \`Authorization: Bearer <ADMIN_TOKEN>\`. The operator API has no rate limits. Answers carry \`Cache-Control: no-store, private\` and \`X-Request-Id\`; every answer that is not a success is the \`Error\` envelope.`;

const SCOPE_TABLE = SCOPES.map((scope) => `| \`${scope}\` | ${SCOPE_GRANTS[scope]} |`).join('\n');

/** Registers the named schemas, both documents and the routes that serve them. */
export async function registerOpenApiDocuments(app: FastifyInstance, settings: DocumentSettings): Promise<void> {
  for (const schema of namedSchemas()) app.addSchema(schema);
  const servers = [
    {
      url: '{origin}',
      description: `this ${settings.brandName} service (PUBLIC_URL)`,
      variables: { origin: { default: settings.publicUrl, description: 'scheme, host and port of the service' } },
    },
  ];
  const common = {
    // components.schemas keep the names the schemas were given (openapi-schemas.ts), not def-0, def-1, …
    refResolver: { buildLocalReference: (json: { $id?: string }, _base: unknown, _fragment: unknown, i: number) => json.$id ?? `def-${i}` },
  };
  // Apache-2.0 (LICENSE), named by its SPDX identifier.
  const license = { name: 'Apache-2.0', identifier: 'Apache-2.0' };
  const contact = { name: `${settings.brandName} maintainers` };

  const publicDocument: SwaggerOptions = {
    ...common,
    openapi: {
      openapi: '3.1.0',
      info: { title: `${settings.brandName} public API`, version: settings.version, description: PUBLIC_DESCRIPTION, license, contact },
      servers,
      components: {
        securitySchemes: {
          bearer: {
            type: 'http',
            scheme: 'bearer',
            description: `An API key (\`lk_…\`), made by the operator with a location, an expiry and a list of scopes:\n\n| Scope | Grants |\n|---|---|\n${SCOPE_TABLE}\n\nEach operation's \`security\` lists the scopes it accepts, as OpenAPI 3.1 allows for schemes other than OAuth 2.`,
          },
        },
      },
      security: [{ bearer: [] }],
      tags: [
        { name: 'Locks', description: 'Locks in scope, and remote unlocks of those on a gateway.' },
        { name: 'Security groups', description: 'Access profiles: the codes keys are issued with.' },
        { name: 'People', description: 'The people who hold keys; creates de-duplicate on phone and e-mail.' },
        { name: 'Keys', description: 'Phone keys, cards and fobs; issuing one sends a setup link.' },
        { name: 'Invitations', description: 'Setup links sent to people, and what became of them.' },
        { name: 'Events', description: 'The access log: door activity, oldest first.' },
        { name: 'Webhooks', description: 'Subscriptions that receive events as signed HTTP POSTs, and their deliveries.' },
      ],
    },
    transform: keepRoutesOf('public'),
    transformObject: finishing('public'),
  };
  await app.register(swagger, publicDocument);

  const operatorDocument: SwaggerOptions = {
    ...common,
    decorator: 'operatorSwagger',
    openapi: {
      openapi: '3.1.0',
      info: { title: `${settings.brandName} operator API`, version: settings.version, description: OPERATOR_DESCRIPTION, license, contact },
      servers,
      components: { securitySchemes: { operatorToken: { type: 'http', scheme: 'bearer', description: 'The operator token, ADMIN_TOKEN.' } } },
      security: [{ operatorToken: [] }],
      tags: [
        { name: 'Accounts', description: 'Accounts, their departments and dashboard users.' },
        { name: 'API keys', description: 'The credentials of the public API.' },
        { name: 'Locks', description: 'Locks and security groups.' },
        { name: 'Gateways', description: 'The MQTT gateways at the doors and their credentials.' },
        { name: 'Controllers', description: 'UHPPOTE access controllers: boards that keep their own card list, an account\'s external locking system (README "Real controllers").' },
        { name: 'People', description: 'Service-managed people.' },
        { name: 'Keys', description: 'Keys handed over in the dashboard.' },
        { name: 'Sandbox', description: 'The simulated outside world; these paths exist only with SANDBOX=true.' },
      ],
    },
    transform: keepRoutesOf('admin'),
    transformObject: finishing('admin'),
  };
  await app.register(swagger, operatorDocument);

  app.get('/v1/openapi.json', { config: { access: { kind: 'open' } }, schema: { hide: true } }, async () => app.swagger());
  app.get('/admin/v1/openapi.json', { config: { access: { kind: 'admin' } }, schema: { hide: true } }, async () => app.operatorSwagger());
}

/** A document keeps the routes of one kind of access and hides every other. */
function keepRoutesOf(kind: RouteAccess['kind']): SwaggerTransform {
  return ({ schema, url, route }) => ({
    schema: (route.config as { access?: RouteAccess } | undefined)?.access?.kind === kind ? schema : { ...schema, hide: true },
    url,
  });
}

function finishing(kind: 'public' | 'admin'): SwaggerTransformObject {
  return (document) => ('openapiObject' in document ? finishDocument(document.openapiObject, kind) : document.swaggerObject);
}
