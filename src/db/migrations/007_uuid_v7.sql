-- UUID version 7 (RFC 9562) for a given time, made in SQL so that a statement can fan an event out to
-- its webhook deliveries by itself (the same layout as src/platform/ids.ts: 48 bits of milliseconds,
-- version 7, random bits). A v4 UUID supplies the randomness and the variant; bits 52 and 53 turn its
-- version nibble 0100 into 0111.
CREATE FUNCTION uuid_v7_at(at timestamptz) RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send(floor(extract(epoch FROM at) * 1000)::bigint) FROM 3) FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;
