// The key holder module's schemas in the operator API: a phone key's devices.
import { Type } from '@sinclair/typebox';
import { named } from '../../platform/openapi-schemas.ts';

export const KeyDevice = named(
  'KeyDevice',
  Type.Object({
    id: Type.Integer({ description: 'the device (passkey) id, for removing it' }),
    registered_at: Type.String({ format: 'date-time', description: 'when the holder registered it on the setup page' }),
    last_used_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], { description: 'its last verified tap; null: never used' }),
  }),
);

export const KeyDeviceList = named('KeyDeviceList', Type.Object({ data: Type.Array(KeyDevice) }));
