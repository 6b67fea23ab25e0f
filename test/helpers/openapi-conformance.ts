// A client of the test service whose every answer must be one its OpenAPI document describes: the status is
// listed for the operation, the body validates against that answer's schema (ajv, JSON Schema 2020-12 as
// OpenAPI 3.1 has it), a documented header that is present has the documented form. A path the document
// lacks must answer 404, a documented path called with another method 405 with Allow, both in the envelope.
import assert from 'node:assert/strict';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { HttpResult, RequestOptions, TestService } from './service.ts';

interface Response {
  content?: Record<string, { schema: unknown }>;
  headers?: Record<string, { $ref?: string; schema?: unknown }>;
}
interface Operation {
  operationId: string;
  responses: Record<string, Response>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, unknown>; headers?: Record<string, { schema: unknown }> };
}

/** JSON pointer segment. */
const segment = (text: string) => text.replace(/~/g, '~0').replace(/\//g, '~1');

/** Every object schema that does not say otherwise admits no property it does not list. */
function closeObjects(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(closeObjects);
  if (!value || typeof value !== 'object') return value;
  const out = Object.fromEntries(Object.entries(value).map(([key, item]) => [key, key === 'properties' ? Object.fromEntries(Object.entries(item as object).map(([k, v]) => [k, closeObjects(v)])) : closeObjects(item)]));
  if ('properties' in out && !('additionalProperties' in out)) out.additionalProperties = false;
  return out;
}

export class ConformanceChecker {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  /** `operationId status` of every answer checked. */
  readonly answered = new Set<string>();
  private readonly routes: Array<{ pattern: RegExp; template: string; methods: Record<string, Operation> }>;

  constructor(
    private readonly name: string,
    private readonly document: Document,
  ) {
    addFormats.default(this.ajv);
    this.ajv.addSchema(closeObjects(document) as object, name);
    this.routes = Object.entries(document.paths).map(([template, methods]) => ({
      template,
      methods,
      pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`),
    }));
  }

  operationIds(): string[] {
    return Object.values(this.document.paths).flatMap((methods) => Object.values(methods).map((operation) => operation.operationId));
  }

  /** Fails unless `res` is an answer the document describes for `method path`; returns the operationId. */
  check(method: string, path: string, res: HttpResult<unknown>): string | null {
    const pathname = new URL(path, 'http://service').pathname;
    const route = this.routes.find((r) => r.pattern.test(pathname));
    const label = `${method} ${path.slice(0, 120)} answered ${res.status} ${res.text.slice(0, 200)}`;
    if (!route) {
      assert.equal(res.status, 404, `${label}: a path the ${this.name} document lacks`);
      this.validate(`#/components/schemas/Error`, res.body, label);
      return null;
    }
    const operation = route.methods[method.toLowerCase()];
    if (!operation) {
      assert.equal(res.status, 405, `${label}: a method the ${this.name} document lacks for ${route.template}`);
      assert.ok(res.headers.get('allow'), `${label}: 405 without Allow`);
      this.validate(`#/components/schemas/Error`, res.body, label);
      return null;
    }
    const status = String(res.status);
    const response = operation.responses[status];
    assert.ok(response, `${label}: ${operation.operationId} does not document ${status} (${Object.keys(operation.responses).join(', ')})`);
    const base = `#/paths/${segment(route.template)}/${method.toLowerCase()}/responses/${status}`;
    if (response.content?.['application/json']) {
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/, `${label}: Content-Type`);
      this.validate(`${base}/content/application~1json/schema`, res.body, `${label} (${operation.operationId})`);
    } else {
      assert.equal(res.text, '', `${label}: ${operation.operationId} documents no body for ${status}`);
    }
    for (const [header, object] of Object.entries(response.headers ?? {})) {
      const value = res.headers.get(header);
      if (value === null) continue;
      const schema = object.$ref ? this.document.components.headers?.[object.$ref.split('/').pop() ?? '']?.schema : object.schema;
      const typed = (schema as { type?: string } | undefined)?.type === 'integer' ? Number(value) : value;
      const valid = this.ajv.compile(schema as object);
      assert.ok(valid(typed), `${label}: header ${header}: ${value}`);
    }
    this.answered.add(`${operation.operationId} ${status}`);
    return operation.operationId;
  }

  private validate(pointer: string, body: unknown, label: string): void {
    const validate = this.ajv.getSchema(`${this.name}${pointer}`);
    assert.ok(validate, `no schema at ${pointer}`);
    assert.ok(validate(body), `${label}: the body does not match the document: ${this.ajv.errorsText(validate.errors)}`);
  }
}

/**
 * The test service with request() checked against the public document and admin() against the operator
 * document; fixtures made through it are checked too.
 */
export async function conformingService(service: TestService): Promise<{ service: TestService; public: ConformanceChecker; operator: ConformanceChecker }> {
  const publicDocument = (await service.request<Document>('GET', '/v1/openapi.json')).body;
  const operatorDocument = (await service.admin<Document>('GET', '/admin/v1/openapi.json')).body;
  const checkers = { public: new ConformanceChecker('public', publicDocument), operator: new ConformanceChecker('operator', operatorDocument) };
  const checked: TestService = {
    ...service,
    async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<HttpResult<T>> {
      const res = await service.request<T>(method, path, options);
      (path.startsWith('/admin/') ? checkers.operator : checkers.public).check(method, path, res as HttpResult<unknown>);
      return res;
    },
    async admin<T>(method: string, path: string, body?: unknown): Promise<HttpResult<T>> {
      const res = await service.admin<T>(method, path, body);
      checkers.operator.check(method, path, res as HttpResult<unknown>);
      return res;
    },
  };
  return { service: checked, ...checkers };
}
