import { Type, type Static } from '@sinclair/typebox';
import { named, ref } from '../../platform/openapi-schemas.ts';
import { Page, PageQuery } from '../../platform/pagination.ts';
import { Id, Name, Nullable, SingleLine } from '../../platform/schemas.ts';
import { FORM } from '../../platform/validation.ts';
import { LocationRef } from '../catalog/schemas.ts';
import { EmbeddedKey } from '../keys/schemas.ts';


/** Fields of create and update; every one but name may be null (unknown). Bounds are in the README. */
export const personFields = {
  name: Name({ description: 'a reserved name is refused' }),
  email: Nullable(Type.String({ format: 'email', maxLength: 254 })),
  phone: Nullable(Type.String({ minLength: 1, maxLength: 40, description: 'international format: + and the country code' })),
  company_name: Nullable(SingleLine({ maxLength: 200 })),
  title: Nullable(SingleLine({ maxLength: 200 })),
  language: Nullable(
    Type.String({ pattern: '^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})?$', maxLength: 12, description: 'ISO 639 code, e.g. en or en-GB', [FORM]: 'an ISO 639 language code such as en or en-GB' }),
  ),
  location_id: Id({ description: "default: the API key's location" }),
};

const personCreateFields = Type.Object(
  {
    name: personFields.name,
    email: Type.Optional(personFields.email),
    phone: Type.Optional(personFields.phone),
    company_name: Type.Optional(personFields.company_name),
    title: Type.Optional(personFields.title),
    language: Type.Optional(personFields.language),
    location_id: Type.Optional(personFields.location_id),
  },
  { additionalProperties: false },
);
export const PersonCreate = named(
  'PersonCreate',
  Type.Object(personCreateFields.properties, {
    additionalProperties: false,
    description: 'A new person: `name` is required; unknown fields are refused.',
  }),
);
export type PersonCreate = Static<typeof PersonCreate>;

export const PersonUpdate = named(
  'PersonUpdate',
  Type.Partial(personCreateFields, { additionalProperties: false, description: 'Only the fields sent change; `null` clears a field (except `name`).' }),
);
export type PersonUpdate = Static<typeof PersonUpdate>;

export const OperatorPersonCreate = named(
  'OperatorPersonCreate',
  Type.Object(
    {
      ...personCreateFields.properties,
      location_id: personFields.location_id,
      managed: Type.Optional(Type.Boolean({ default: false, description: 'a managed person answers 403 forbidden to public PUT and DELETE' })),
    },
    { additionalProperties: false, description: 'The public create fields, `location_id` required, plus `managed`.' },
  ),
);
export type OperatorPersonCreate = Static<typeof OperatorPersonCreate>;

const personFieldsOut = {
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  email: Type.Union([Type.String(), Type.Null()]),
  phone: Type.Union([Type.String(), Type.Null()], { description: 'E.164' }),
  company_name: Type.Union([Type.String(), Type.Null()]),
  title: Type.Union([Type.String(), Type.Null()]),
  language: Type.Union([Type.String(), Type.Null()]),
  location: ref(LocationRef),
};

export const Person = named('Person', Type.Object(personFieldsOut, { description: 'A person who may hold keys; a field never given reads null.' }));
export type Person = Static<typeof Person>;

export const PersonWithKeys = named(
  'PersonWithKeys',
  Type.Object(
    { ...personFieldsOut, keys: Type.Array(ref(EmbeddedKey), { description: "the person's keys in scope" }) },
    { description: 'A person with the keys they hold inside the API key\'s scope.' },
  ),
);
export const PersonPage = named('PersonPage', Page(ref(Person), 'A page of people.'));

/** The query of GET /v1/people (its page-cache key is derived from it: platform/page-cache.ts). */
export const PersonListQuery = Type.Object({
  ...PageQuery,
  email: Type.Optional(Type.String({ maxLength: 254, description: 'exact, case-insensitive' })),
  phone: Type.Optional(Type.String({ maxLength: 40, description: 'any international format; normalised before matching (another answers 400)' })),
});
export type PersonListQuery = Static<typeof PersonListQuery>;

/** The query of GET /admin/v1/people. */
export const PersonSearchQuery = Type.Object({
  ...PageQuery,
  account_id: Id({ description: 'the account' }),
  q: Type.Optional(Type.String({ maxLength: 200, description: 'part of a name, an e-mail or a phone number' })),
});
export type PersonSearchQuery = Static<typeof PersonSearchQuery>;
