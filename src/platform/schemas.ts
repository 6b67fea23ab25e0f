// Shared response schemas: the error envelope, for the OpenAPI document and response serialisation.
import { Type } from '@sinclair/typebox';

export const ErrorEnvelope = Type.Object(
  {
    error: Type.Object({
      code: Type.String(),
      message: Type.String(),
      details: Type.Optional(
        Type.Array(Type.Object({ field: Type.String(), code: Type.String(), message: Type.String() })),
      ),
    }),
  },

);

/** The answers any public endpoint can give besides its own (spec: Endpoints preamble). */
export const errorResponses = {
  400: ErrorEnvelope,
  401: ErrorEnvelope,
  403: ErrorEnvelope,
  404: ErrorEnvelope,
  422: ErrorEnvelope,
  429: ErrorEnvelope,
  500: ErrorEnvelope,
};

export const NoContent = Type.Null({ description: 'no body' });
